import { type KV, type KvOptions, Kvm } from '@nats-io/kv';
import { type ObjectStore, type ObjectStoreOptions, Objm } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { whileJetStreamStarts } from './internal/while-jetstream-starts';

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
): Promise<KV> {
  return retryCreateRace(() => new Kvm(nc).create(name, options));
}

/**
 * Opens an object store, creating it when missing; safe to call from every process at once
 * (see {@link createKv}). An existing store is opened with the settings it has.
 */
export function createObjectStore(
  nc: NatsConnection,
  name: string,
  options: Partial<ObjectStoreOptions> = {},
): Promise<ObjectStore> {
  return retryCreateRace(() => new Objm(nc).create(name, options));
}

function retryCreateRace<T>(create: () => Promise<T>): Promise<T> {
  return whileJetStreamStarts(async () => {
    try {
      return await create();
    } catch (err) {
      if (!isCreateRace(err)) throw err;
      return await create();
    }
  });
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
