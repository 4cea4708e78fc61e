import { randomBytes } from 'node:crypto';
import { AckPolicy, DeliverPolicy } from '@nats-io/jetstream';
import { Bucket, type KV } from '@nats-io/kv';

/** The latest entry of one key, as {@link kvLatest} read it. */
export interface KvLatestEntry {
  key: string;
  /** Its revision (the stream sequence of the entry). */
  revision: number;
  /** `PUT`, or the marker a delete (`DEL`) or purge (`PURGE`) left. */
  operation: 'PUT' | 'DEL' | 'PURGE';
  value: Uint8Array;
}

/**
 * The latest entry of every key of `kv` matching `filter` (a key with `*` and `>` wildcards), in
 * one pass of a consumer made for it and deleted after it — or undefined when the pass has not
 * ended within `deadlineMs` (a stream electing its leader, a consumer create that is not
 * answered), for the caller to read the keys one by one instead.
 *
 * Not `kv.history()`: its ordered consumer outlives the iterator by five minutes (the client
 * sets that inactivity threshold and never deletes it), so a listing every few seconds kept
 * sixty consumers, each with its goroutines and store, alive in nats-server at all times. This
 * one asks for the last entry per subject only, in memory, and is deleted when the pass ends;
 * its own inactivity threshold (30 s) covers a caller that dies mid-pass.
 */
export async function kvLatest(
  kv: KV,
  filter: string,
  deadlineMs: number,
): Promise<KvLatestEntry[] | undefined> {
  if (!(kv instanceof Bucket)) return undefined;
  const deadline = Date.now() + deadlineMs;
  const name = `latest_${randomBytes(6).toString('hex')}`;
  const info = await kv.jsm.consumers.add(kv.stream, {
    name,
    // The singular filter: ordered consumers ignore filters on nats-server 2.9 (PLATFORM-NOTES).
    filter_subject: kv.fullKeyName(filter),
    deliver_policy: DeliverPolicy.LastPerSubject,
    ack_policy: AckPolicy.None,
    mem_storage: true,
    num_replicas: 1,
    inactive_threshold: 30_000_000_000,
  });
  try {
    const entries: KvLatestEntry[] = [];
    let left = info.num_pending;
    if (left === 0) return entries;
    const consumer = await kv.js.consumers.get(kv.stream, name);
    while (left > 0) {
      const remainingMs = deadline - Date.now();
      if (remainingMs <= 0) return undefined;
      const batch = await consumer.fetch({
        max_messages: Math.min(left, 1_000),
        // The client's least expiry is 1 s; a pass past its deadline is dropped below.
        expires: Math.max(1_000, remainingMs),
      });
      let got = 0;
      for await (const m of batch) {
        got++;
        const op = m.headers?.get('KV-Operation');
        entries.push({
          key: kv.decodeKey(m.subject.substring(kv.prefixLen)),
          revision: m.seq,
          operation: op === 'DEL' || op === 'PURGE' ? op : 'PUT',
          value: m.data,
        });
        left = m.info.pending;
        if (left === 0) break;
      }
      if (got === 0) return undefined;
    }
    return entries;
  } finally {
    await kv.jsm.consumers.delete(kv.stream, name).catch(() => undefined);
  }
}
