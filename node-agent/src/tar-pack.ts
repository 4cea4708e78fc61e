import { Readable } from 'node:stream';
import tar from 'tar-stream';

/** Header of one entry written by {@link packStream}. */
export type TarHeader = Partial<tar.Header> & { name: string };

/** A stream an entry's body is piped from (a Node or streamx readable). */
export interface TarBodyStream {
  pipe(destination: NodeJS.WritableStream): unknown;
}

/**
 * Adds one entry to the tar: resolves once its body is written. A file's body is a buffer (none:
 * empty) or a stream piped in, which must hold exactly `header.size` bytes.
 */
export type AddTarEntry = (header: TarHeader, body?: Buffer | TarBodyStream) => Promise<void>;

function noop(): void {}

/**
 * A tar stream written by `produce`, one entry at a time and in bounded memory: the one way
 * Troupe writes tars.
 *
 * tar-stream destroys the open entry's stream with the pack's error when the pack is destroyed —
 * as it is when the consumer gives up (an upload aborted because its activation was fenced). An
 * entry stream with no `'error'` listener throws that error out of the process, so here every
 * entry stream has one; the error reaches the consumer through the stream itself.
 * A `produce` that throws fails the stream with its error; the stream ends when it returns.
 */
export function packStream(produce: (add: AddTarEntry) => Promise<void>): Readable {
  const pack = tar.pack();
  const add: AddTarEntry = (header, body) => {
    const type = header.type ?? 'file';
    const data = body ?? (type === 'file' ? Buffer.alloc(0) : undefined);
    let sink: NodeJS.WritableStream | undefined;
    const written = new Promise<void>((resolve, reject) => {
      const done = (err?: Error | null): void => (err ? reject(err) : resolve());
      // Throws once the pack is destroyed: the promise rejects with it.
      sink = Buffer.isBuffer(data) ? pack.entry(header, data, done) : pack.entry(header, done);
    });
    sink?.on('error', noop);
    if (sink !== undefined && data !== undefined && !Buffer.isBuffer(data)) data.pipe(sink);
    // Awaited by `produce`, or reported through the pack when `produce` does not wait.
    written.catch(noop);
    return written;
  };
  produce(add).then(
    () => pack.finalize(),
    (err: Error) => pack.destroy(err),
  );
  // tar-stream's streams are streamx streams: hand callers a real Node stream.
  return Readable.from(pack);
}
