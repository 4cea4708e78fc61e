import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { type KV, type KvOptions, Kvm } from '@nats-io/kv';
import { type ObjectStore, type ObjectStoreOptions, Objm } from '@nats-io/obj';
import { type NatsConnection, TimeoutError } from '@nats-io/transport-node';
import { isTransientNatsError } from './internal/nats-errors';
import { whileJetStreamStarts } from './internal/while-jetstream-starts';

/**
 * How long one look-up of a bucket's stream waits for its answer. A stream that is electing a
 * leader (a server of its group was just killed) answers nothing: the request is lost, and the
 * JetStream API's own 5 s timeout made every such look-up cost 5 s — the coordinator's leader
 * services, which open their buckets first, started 5.1 s after a NATS server's `kill -9` in
 * 5 of 62 chaos starts (docs/reliability-history.md). A stream that has a leader answers in
 * milliseconds, so a lost look-up is asked again after this.
 */
export const STREAM_LOOKUP_TIMEOUT_MS = 1_500;

/**
 * Opens a KV bucket, creating it when missing; safe to call from every process at once.
 *
 * `Kvm.create` looks the bucket's stream up and adds it when missing. Two processes starting
 * together (a coordinator and a node agent on a fresh cluster) can both miss it, and the second
 * add then fails with "stream name already in use" — with "a different configuration" when
 * their options differ, e.g. replicas. The retry's look-up finds the stream the other process
 * made and opens it as it is: an existing bucket's settings are never changed. While JetStream
 * does not answer yet (a cluster just started), the call is retried for up to 30 s.
 */
export function createKv(
  nc: NatsConnection,
  name: string,
  options: Partial<KvOptions> = {},
  client: BucketClientOptions = {},
): Promise<KV> {
  return retryCreateRace(nc, `KV_${name}`, () =>
    new Kvm(clientOf(nc, client)).create(name, options),
  );
}

/** How a bucket's operations talk to JetStream. */
export interface BucketClientOptions {
  /**
   * How long each of the bucket's requests (a put's acknowledgement, a get, an object's chunk)
   * waits for its answer. A request sent while the bucket's stream elects a leader is lost, not
   * late, and waits all of it: a store read on a turn's path (the job store) is better asked again
   * sooner. @default the JetStream client's 5 s
   */
  timeoutMs?: number;
}

function clientOf(nc: NatsConnection, client: BucketClientOptions) {
  return client.timeoutMs === undefined ? nc : jetstream(nc, { timeout: client.timeoutMs });
}

/**
 * Opens an object store, creating it when missing; safe to call from every process at once
 * (see {@link createKv}). An existing store is opened with the settings it has.
 */
export function createObjectStore(
  nc: NatsConnection,
  name: string,
  options: Partial<ObjectStoreOptions> = {},
  client: BucketClientOptions = {},
): Promise<ObjectStore> {
  return retryCreateRace(nc, `OBJ_${name}`, () =>
    new Objm(clientOf(nc, client)).create(name, options),
  );
}

/**
 * Looks `stream` up with {@link STREAM_LOOKUP_TIMEOUT_MS} of patience, so that `create` (whose
 * own look-up waits the API's 5 s) runs once the stream answers. Only a transient failure (no
 * answer) is thrown, to be retried; any other answer — "stream not found", which `create`
 * mends by adding it, or an invalid name, which `create` reports in its own words — is
 * `create`'s to handle.
 */
async function streamAnswers(nc: NatsConnection, stream: string): Promise<void> {
  const jsm = await jetstreamManager(nc, { timeout: STREAM_LOOKUP_TIMEOUT_MS, checkAPI: false });
  try {
    await jsm.streams.info(stream);
  } catch (err) {
    if (isTransientNatsError(err)) throw err;
  }
}

/**
 * How long one attempt to open (or create) a bucket may take before it is made again. The look-up
 * before it found the stream led, but its leader can change in between (a NATS server killed a
 * moment before): `create`'s own requests were then lost and waited the JetStream API's 5 s —
 * a new leader coordinator opened its nodes bucket in 5.1 s (chaos run 23, seed 9302), and no
 * actor was placed meanwhile. Opening an existing bucket takes milliseconds; an attempt left
 * behind does no harm (it opens, or creates what the next one then finds).
 */
export const BUCKET_OPEN_ATTEMPT_MS = 2_000;

function retryCreateRace<T>(
  nc: NatsConnection,
  stream: string,
  create: () => Promise<T>,
): Promise<T> {
  return whileJetStreamStarts(async () => {
    await streamAnswers(nc, stream);
    return withinAttempt(async () => {
      try {
        return await create();
      } catch (err) {
        if (!isCreateRace(err)) throw err;
        return await create();
      }
    }, BUCKET_OPEN_ATTEMPT_MS);
  });
}

/** `attempt()`, or a NATS `TimeoutError` (transient: tried again) when it takes over `ms`. */
async function withinAttempt<T>(attempt: () => Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new TimeoutError()), ms);
  });
  try {
    // Promise.race handles the attempt's own later rejection, should it come after the timeout.
    return await Promise.race([attempt(), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A stream of that name was created in between: JetStream API error 10058 ("stream name already
 * in use"), or 10065 ("subjects overlap with an existing stream"), which the server answers when
 * the other add has claimed the bucket's subjects first. An overlap with some other stream is
 * not a race; the retry then fails with the same error, which is passed on.
 */
function isCreateRace(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  return (
    code === 10058 ||
    code === 10065 ||
    /stream name already in use|subjects overlap with an existing stream/i.test(err.message)
  );
}
