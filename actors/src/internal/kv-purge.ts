import { Bucket, type KV } from '@nats-io/kv';

/**
 * Removes every stored revision of `key` — up to and including `throughRevision` when given, so a
 * write made after it is kept — leaving nothing behind: no delete marker, no per-subject state in
 * the server (`kv.purge` keeps a marker message per key for good). Watchers are not told; callers
 * tell their own readers. Returns how many messages went.
 */
export async function purgeKvKey(kv: KV, key: string, throughRevision?: number): Promise<number> {
  if (!(kv instanceof Bucket)) {
    // Not a JetStream bucket (no stream to purge): the KV's own purge is the closest.
    await kv.purge(key);
    return 1;
  }
  const filter = kv.fullKeyName(key);
  const r = await kv.jsm.streams.purge(
    kv.stream,
    throughRevision === undefined ? { filter } : { filter, seq: throughRevision + 1 },
  );
  return r.purged;
}
