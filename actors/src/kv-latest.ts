import { randomBytes } from 'node:crypto';
import { AckPolicy, DeliverPolicy } from '@nats-io/jetstream';
import { Bucket, type KV } from '@nats-io/kv';
import { kvKeysAt } from './kv-keys';

/** Keys the pass missed (overwritten while it ran) read at once after it. */
const MISSED_READS_AT_ONCE = 256;

/** The latest entry of one key, as {@link kvLatest} read it. */
export interface KvLatestEntry {
  key: string;
  /** Its revision (the stream sequence of the entry). */
  revision: number;
  /** `PUT`, or the marker a delete (`DEL`) or purge (`PURGE`) left. */
  operation: 'PUT' | 'DEL' | 'PURGE';
  value: Uint8Array;
}

/** What {@link kvLatest} read. */
export interface KvLatest {
  /** One entry per key. */
  entries: KvLatestEntry[];
  /**
   * The bucket revision the pass read up to: every change of a matching key at or below it is in
   * `entries` or was overwritten by a newer one, so a watch from the next revision misses nothing.
   * An entry may be newer than this (a key overwritten while it was read), and a watch from the
   * next revision then sees that change again.
   */
  revision: number;
}

/**
 * The latest entry of every key of `kv` matching `filter` (a key with `*` and `>` wildcards), in
 * one pass of a consumer made for it and deleted after it — or undefined when the pass has not
 * ended within `deadlineMs` (a stream electing its leader, a consumer create that is not
 * answered), for the caller to read the keys one by one instead.
 *
 * The pass reads every entry the stream keeps for those keys, in stream order, up to the last
 * sequence the stream had when it began: one message per key in a bucket of history 1 (what this
 * is for), `history` messages per key otherwise. Not a consumer that delivers the last entry per
 * subject: nats-server 2.9 builds that one's list of sequences when it is created, and when a key
 * is overwritten during the pass (its old entry removed) it delivers other entries in its place
 * and counts its pending messages wrong, so keys were missing from one listing in six with four
 * writers busy. A key overwritten before the pass reached it has its newer entry past that last
 * sequence, maybe past where the pass stops; the keys the stream's subject index listed at the
 * start and the pass did not deliver are read one by one after it.
 *
 * Not `kv.history()`: its ordered consumer outlives the iterator by five minutes (the client
 * sets that inactivity threshold and never deletes it), so a listing every few seconds kept
 * sixty consumers, each with its goroutines and store, alive in nats-server at all times. This
 * one is in memory and deleted when the pass ends; its own inactivity threshold (30 s) covers a
 * caller that dies mid-pass.
 */
export async function kvLatest(
  kv: KV,
  filter: string,
  deadlineMs: number,
): Promise<KvLatest | undefined> {
  if (!(kv instanceof Bucket)) return undefined;
  const deadline = Date.now() + deadlineMs;
  // The keys the stream's subject index lists, and the stream's last sequence: where the pass ends.
  const { keys: indexed, revision: until } = await kvKeysAt(kv, filter);
  if (indexed.length === 0) return { entries: [], revision: until };

  const latest = new Map<string, KvLatestEntry>();
  const name = `latest_${randomBytes(6).toString('hex')}`;
  const created = await kv.jsm.consumers.add(kv.stream, {
    name,
    // The singular filter: ordered consumers ignore filters on nats-server 2.9 (PLATFORM-NOTES).
    filter_subject: kv.fullKeyName(filter),
    deliver_policy: DeliverPolicy.All,
    ack_policy: AckPolicy.None,
    mem_storage: true,
    num_replicas: 1,
    inactive_threshold: 30_000_000_000,
  });
  let revision = until;
  try {
    let left = created.num_pending;
    const consumer = left > 0 ? await kv.js.consumers.get(kv.stream, name) : undefined;
    while (consumer && left > 0) {
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
        const key = kv.decodeKey(m.subject.substring(kv.prefixLen));
        latest.set(key, {
          key,
          revision: m.seq,
          operation: op === 'DEL' || op === 'PURGE' ? op : 'PUT',
          value: m.data,
        });
        revision = Math.max(revision, m.seq);
        // Past the start's last sequence, or nothing newer: stop (writers may never pause).
        left = m.seq >= until ? 0 : m.info.pending;
        if (left === 0) break;
      }
      if (got === 0) return undefined;
    }
  } finally {
    await kv.jsm.consumers.delete(kv.stream, name).catch(() => undefined);
  }
  const missed = indexed.filter((key) => !latest.has(key));
  for (let i = 0; i < missed.length; i += MISSED_READS_AT_ONCE) {
    await Promise.all(
      missed.slice(i, i + MISSED_READS_AT_ONCE).map(async (key) => {
        const e = await kv.get(key);
        if (e)
          latest.set(key, { key, revision: e.revision, operation: e.operation, value: e.value });
      }),
    );
  }
  return { entries: [...latest.values()], revision };
}
