import { createObjectStore } from '@troupe/actors';
import { Readable } from 'node:stream';
import {
  ErrorCode,
  fromAbortSignal,
  invalidArgument,
  isTroupeError,
  type Logger,
  noopLogger,
  objectStoreName,
  TroupeError,
} from '@troupe/proto';
import { type ObjectInfo, type ObjectStore } from '@nats-io/obj';
import { type NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';

const NAME_RULE =
  'must be 1 to 512 characters of [A-Za-z0-9._-] in "/"-separated segments (relative, no empty, "." or ".." segment)';

/**
 * An artifact's object name: `/`-separated segments of `[A-Za-z0-9._-]`, e.g.
 * `jobs/<jobId>/tasks/<taskId>/workspace.tar`.
 */
export const ArtifactNameSchema = z
  .string()
  .min(1, NAME_RULE)
  .max(512, NAME_RULE)
  .regex(/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/, NAME_RULE)
  .refine((n) => !n.split('/').some((s) => s === '.' || s === '..'), { message: NAME_RULE });

/** Metadata key that holds the content type (reserved: not allowed in `meta`). */
const CONTENT_TYPE_KEY = 'content-type';

/** What the store knows about one artifact. */
export interface ArtifactInfo {
  /** Object name. */
  name: string;
  /** Size in bytes. */
  size: number;
  /** SHA-256 of the content, lowercase hex (the same form as a grade's `graderDigest`). */
  digest: string;
  /** Content type given at `put`, if any. */
  contentType?: string;
  /** Metadata given at `put`. */
  meta: Record<string, string>;
  /** When it was written (ISO 8601). */
  mtime: string;
}

/** Options of {@link ArtifactStore.put}. */
export interface ArtifactPutOptions {
  /** Content type, e.g. `application/x-tar`. @default none */
  contentType?: string;
  /** Small string metadata kept with the object (e.g. `{jobId, sandbox}`). @default {} */
  meta?: Record<string, string>;
  /** Aborts the upload; the partial object is purged. */
  signal?: AbortSignal;
}

/** Options of {@link ArtifactStore.open}. */
export interface ArtifactStoreOptions {
  /** Cluster whose store (`troupe_<cluster>_artifacts`) to open. */
  cluster: string;
  /** Replicas when the store has to be created. @default 1 */
  replicas?: number;
  /** Logger. @default a logger that drops everything */
  logger?: Logger;
}

/** Bytes, a Node stream of them, or a web stream of them. */
export type ArtifactSource = Uint8Array | Readable | ReadableStream<Uint8Array>;

/**
 * The cluster's artifacts — exported workspaces, grader inputs, grading logs, trajectories — in
 * the JetStream object store `troupe_<cluster>_artifacts` (created on first open). Objects are
 * chunked by NATS, so they may be far larger than a message; reads verify the SHA-256 digest.
 * Writing a name again replaces the object.
 */
export class ArtifactStore {
  private constructor(
    /** Bucket name, `troupe_<cluster>_artifacts`. */
    readonly bucket: string,
    private readonly store: ObjectStore,
    private readonly log: Logger,
  ) {}

  /**
   * Opens (creating if needed) the cluster's object store.
   * @throws TroupeError `INVALID_ARGUMENT` for a bad cluster name, `UNAVAILABLE` when JetStream
   *   does not answer
   */
  static async open(nc: NatsConnection, options: ArtifactStoreOptions): Promise<ArtifactStore> {
    const bucket = objectStoreName(options.cluster);
    let store: ObjectStore;
    try {
      store = await createObjectStore(nc, bucket, { replicas: options.replicas ?? 1 });
    } catch (err) {
      throw new TroupeError(ErrorCode.UNAVAILABLE, `cannot open object store ${bucket}`, {
        cause: err,
      });
    }
    const log = (options.logger ?? noopLogger).child({ component: 'artifact-store', bucket });
    return new ArtifactStore(bucket, store, log);
  }

  /**
   * Writes (or replaces) an artifact from bytes or a stream.
   * @throws TroupeError `INVALID_ARGUMENT` for a bad name or meta, `CANCELLED` when aborted,
   *   `UNAVAILABLE` when JetStream fails, or the source stream's own error
   */
  async put(
    name: string,
    data: ArtifactSource,
    options: ArtifactPutOptions = {},
  ): Promise<ArtifactInfo> {
    checkName(name);
    const metadata: Record<string, string> = {};
    for (const [k, v] of Object.entries(options.meta ?? {})) {
      if (k === CONTENT_TYPE_KEY) {
        throw invalidArgument(`meta.${k}`, 'is reserved: use contentType');
      }
      if (typeof v !== 'string') throw invalidArgument(`meta.${k}`, 'must be a string', v);
      metadata[k] = v;
    }
    if (options.contentType !== undefined) metadata[CONTENT_TYPE_KEY] = options.contentType;
    const { signal } = options;
    if (signal?.aborted) throw fromAbortSignal(signal);
    const source = toWebStream(data, signal);
    try {
      const info = await this.store.put({ name, metadata }, source);
      this.log.debug({ artifact: name, size: info.size }, 'artifact written');
      return toArtifactInfo(info);
    } catch (err) {
      if (signal?.aborted) throw fromAbortSignal(signal);
      if (isTroupeError(err)) throw err;
      throw new TroupeError(ErrorCode.UNAVAILABLE, `writing artifact ${name} failed`, {
        cause: err,
        details: { artifact: name },
      });
    }
  }

  /**
   * What the store knows about an artifact, or `undefined` when there is none.
   * @throws TroupeError `INVALID_ARGUMENT` for a bad name, `UNAVAILABLE` when JetStream fails
   */
  async info(name: string): Promise<ArtifactInfo | undefined> {
    checkName(name);
    let info: ObjectInfo | null;
    try {
      info = await this.store.info(name);
    } catch (err) {
      throw new TroupeError(ErrorCode.UNAVAILABLE, `reading artifact ${name} failed`, {
        cause: err,
      });
    }
    return info === null || info.deleted ? undefined : toArtifactInfo(info);
  }

  /** Whether an artifact exists. */
  async exists(name: string): Promise<boolean> {
    return (await this.info(name)) !== undefined;
  }

  /**
   * A stream of an artifact's content (its digest is checked at the end: a corrupt object makes
   * the stream fail).
   * @throws TroupeError `NOT_FOUND` when there is no such artifact
   */
  async getStream(
    name: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<{ info: ArtifactInfo; stream: Readable }> {
    checkName(name);
    const { signal } = options;
    if (signal?.aborted) throw fromAbortSignal(signal);
    let result;
    try {
      result = await this.store.get(name);
    } catch (err) {
      throw new TroupeError(ErrorCode.UNAVAILABLE, `reading artifact ${name} failed`, {
        cause: err,
      });
    }
    if (result === null) throw notFound(name);
    // The stream carries the same failure; this promise must not go unhandled.
    result.error.catch(() => undefined);
    const stream = Readable.fromWeb(result.data);
    if (signal) {
      const onAbort = (): void => {
        stream.destroy(fromAbortSignal(signal));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      stream.once('close', () => signal.removeEventListener('abort', onAbort));
    }
    return { info: toArtifactInfo(result.info), stream };
  }

  /**
   * An artifact's content as bytes.
   * @param options.maxBytes - refuse (`INVALID_ARGUMENT`) artifacts larger than this
   * @throws TroupeError `NOT_FOUND` when there is no such artifact
   */
  async get(
    name: string,
    options: { signal?: AbortSignal; maxBytes?: number } = {},
  ): Promise<Uint8Array> {
    const { info, stream } = await this.getStream(name, options);
    if (options.maxBytes !== undefined && info.size > options.maxBytes) {
      stream.destroy();
      throw invalidArgument(
        'maxBytes',
        `artifact ${name} is ${info.size} bytes, more than ${options.maxBytes}`,
      );
    }
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
    } catch (err) {
      if (options.signal?.aborted) throw fromAbortSignal(options.signal);
      throw new TroupeError(ErrorCode.UNAVAILABLE, `reading artifact ${name} failed`, {
        cause: err,
      });
    }
    return Buffer.concat(chunks);
  }

  /**
   * Deletes an artifact. Idempotent.
   * @returns whether there was something to delete
   */
  async delete(name: string): Promise<boolean> {
    if ((await this.info(name)) === undefined) return false;
    try {
      await this.store.delete(name);
    } catch (err) {
      throw new TroupeError(ErrorCode.UNAVAILABLE, `deleting artifact ${name} failed`, {
        cause: err,
      });
    }
    return true;
  }

  /** Every artifact whose name starts with `prefix` (e.g. `jobs/j1/`), sorted by name. */
  async list(prefix = ''): Promise<ArtifactInfo[]> {
    let all: ObjectInfo[];
    try {
      all = await this.store.list();
    } catch (err) {
      throw new TroupeError(ErrorCode.UNAVAILABLE, `listing ${this.bucket} failed`, {
        cause: err,
      });
    }
    return all
      .filter((i) => !i.deleted && i.name.startsWith(prefix))
      .map(toArtifactInfo)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }
}

function checkName(name: string): void {
  const r = ArtifactNameSchema.safeParse(name);
  if (!r.success) throw invalidArgument('name', NAME_RULE, name);
}

function notFound(name: string): TroupeError {
  return new TroupeError(ErrorCode.NOT_FOUND, `artifact ${name} does not exist`, {
    details: { artifact: name },
  });
}

function toArtifactInfo(info: ObjectInfo): ArtifactInfo {
  const { [CONTENT_TYPE_KEY]: contentType, ...meta } = info.metadata ?? {};
  const out: ArtifactInfo = {
    name: info.name,
    size: info.size,
    digest: digestHex(info.digest),
    meta,
    mtime: info.mtime,
  };
  if (contentType !== undefined) out.contentType = contentType;
  return out;
}

/** `SHA-256=<base64url>` (the object store's form) as lowercase hex. */
function digestHex(digest: string): string {
  const prefix = 'SHA-256=';
  if (!digest.startsWith(prefix)) return digest;
  return Buffer.from(digest.slice(prefix.length), 'base64url').toString('hex');
}

/** A web stream over any source that fails with the abort reason when `signal` aborts. */
function toWebStream(data: ArtifactSource, signal?: AbortSignal): ReadableStream<Uint8Array> {
  const iterable: AsyncIterable<Uint8Array> =
    data instanceof Uint8Array
      ? (async function* () {
          yield data;
        })()
      : (data as AsyncIterable<Uint8Array>);
  const it = iterable[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (signal?.aborted) {
        controller.error(fromAbortSignal(signal));
        await it.return?.();
        return;
      }
      try {
        const next = await it.next();
        if (next.done) controller.close();
        else
          controller.enqueue(typeof next.value === 'string' ? Buffer.from(next.value) : next.value);
      } catch (err) {
        controller.error(err);
      }
    },
    async cancel() {
      await it.return?.();
    },
  });
}
