import { Bucket, type KV } from '@nats-io/kv';

/**
 * The keys of a KV bucket that match `filter` (a key with `*` and `>` wildcards), read from its stream's subject index in one request to the stream
 * leader (`STREAM.INFO` with a subject filter; paged for large buckets).
 *
 * Use this, not `kv.keys()`: that one creates an ephemeral consumer, and after a clustered
 * nats-server is lost such a create times out (5 s) about every other time for over a minute —
 * while the stream itself answers within milliseconds once it has a new leader.
 *
 * Unlike `kv.keys()`, a key whose last entry is a delete or purge marker is listed too: read
 * each key to tell (every caller reads them anyway).
 */
export async function kvKeys(kv: KV, filter = '>'): Promise<string[]> {
  return (await kvKeysAt(kv, filter)).keys;
}

/**
 * {@link kvKeys}, with the bucket's revision (its stream's last sequence) when they were listed:
 * reading the keys after that sees every change up to it, so a watch from `revision + 1` misses
 * nothing (a change made while the keys are read may be seen twice). 0 for a bucket this cannot
 * tell (not a JetStream bucket).
 */
export async function kvKeysAt(
  kv: KV,
  filter = '>',
): Promise<{ keys: string[]; revision: number }> {
  if (!(kv instanceof Bucket)) {
    const keys: string[] = [];
    for await (const k of await kv.keys(filter)) keys.push(k);
    return { keys, revision: 0 };
  }
  const info = await kv.jsm.streams.info(kv.stream, { subjects_filter: kv.fullKeyName(filter) });
  return {
    keys: Object.keys(info.state.subjects ?? {}).map((subject) =>
      kv.decodeKey(subject.substring(kv.prefixLen)),
    ),
    revision: info.state.last_seq,
  };
}
