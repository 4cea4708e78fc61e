import { Readable } from 'node:stream';
import tar from 'tar-stream';
import { collect } from './internal/tar';

/** One entry of a tar, as {@link readTar} returns it. */
export interface TarEntry {
  /** Entry name (directories end without `/`). */
  name: string;
  /** Entry type. */
  type: 'file' | 'directory' | 'symlink' | 'other';
  /** Permission bits. */
  mode: number;
  /** Owner uid. */
  uid: number;
  /** Owner gid. */
  gid: number;
  /** Content of a file (empty otherwise). */
  content: Buffer;
  /** Target of a symlink. */
  linkname?: string;
}

/** Reads every entry of a tar (bytes or stream) into memory: for small trees and tests. */
export async function readTar(
  input: Uint8Array | NodeJS.ReadableStream | Readable,
): Promise<TarEntry[]> {
  const extract = tar.extract();
  const source =
    input instanceof Uint8Array ? Readable.from([Buffer.from(input)]) : (input as Readable);
  source.on('error', (err: Error) => extract.destroy(err));
  source.pipe(extract);
  const out: TarEntry[] = [];
  for await (const entry of extract) {
    const h = entry.header;
    const content = await collect(entry as unknown as AsyncIterable<Buffer>);
    const type =
      h.type === 'file' || h.type === 'contiguous-file' || h.type == null
        ? 'file'
        : h.type === 'directory'
          ? 'directory'
          : h.type === 'symlink'
            ? 'symlink'
            : 'other';
    const e: TarEntry = {
      name: h.name.replace(/\/$/, ''),
      type,
      mode: (h.mode ?? 0) & 0o7777,
      uid: h.uid ?? 0,
      gid: h.gid ?? 0,
      content,
    };
    if (h.linkname) e.linkname = h.linkname;
    out.push(e);
  }
  return out;
}
