import {
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
  type StoredMsg,
} from '@nats-io/jetstream';
import { Bucket, type KV } from '@nats-io/kv';
import { leaderGetNext } from './direct-get';

/** Message deletes of one walk awaiting their answer at once. */
const MAX_DELETES_IN_FLIGHT = 64;

/**
 * The stored messages of `subject` in `stream`, oldest first, each read with one MSG.GET
 * `next_by_subj` from the stream leader (not a direct get a lagging replica could answer): no
 * consumer, which the server would keep after a read (an ordered consumer lingers 5 minutes).
 * Ends at the last one, or after `limit` messages.
 */
export async function* subjectMessages(
  jsm: JetStreamManager,
  stream: string,
  subject: string,
  limit = Number.POSITIVE_INFINITY,
): AsyncGenerator<StoredMsg> {
  for (let from = 1, n = 0; n < limit; n++) {
    const m = await leaderGetNext(jsm, stream, subject, from);
    if (m === null) return;
    yield m;
    from = m.seq + 1;
  }
}

/**
 * Deletes the messages of `subject` in `stream` one at a time by sequence, oldest first — up to
 * and including `throughSeq` when given, so a later message is kept — leaving no marker, so the
 * server keeps no per-subject state for it. Returns how many went.
 *
 * Never a filtered stream purge: on nats-server 2.9 a purge filtered to one subject moves the
 * delivery position of the stream's other consumers, which then skip messages of other subjects
 * stored just before it. The process soak stalled on it: the placer's directory watch missed
 * sandboxes going to sleep while finished jobs' actors were retired, and held their slots for
 * good (`actors/test/integration/subject-delete.int.test.ts` shows the skip). Deleting by
 * sequence leaves consumers where they are.
 */
export async function deleteSubjectMessages(
  jsm: JetStreamManager,
  stream: string,
  subject: string,
  throughSeq?: number,
): Promise<number> {
  let deleted = 0;
  let failure: { err: unknown } | undefined;
  const inFlight = new Set<Promise<void>>();
  const remove = async (seq: number): Promise<void> => {
    try {
      await jsm.streams.deleteMessage(stream, seq, false);
      deleted++;
    } catch (err) {
      // Gone already (a concurrent removal, the bucket's own limits) is what was wanted.
      if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.NoMessageFound)) {
        failure ??= { err };
      }
    }
  };
  try {
    for await (const m of subjectMessages(jsm, stream, subject)) {
      if (failure !== undefined || (throughSeq !== undefined && m.seq > throughSeq)) break;
      // Deletes overlap the walk (a job's event log is thousands of messages).
      const p = remove(m.seq).finally(() => inFlight.delete(p));
      inFlight.add(p);
      if (inFlight.size >= MAX_DELETES_IN_FLIGHT) await Promise.race(inFlight);
    }
  } finally {
    await Promise.all(inFlight);
  }
  if (failure) throw failure.err;
  return deleted;
}

/**
 * Removes every stored revision of `key` (up to and including `throughRevision` when given) with
 * {@link deleteSubjectMessages}. Watchers are not told; callers tell their own readers.
 */
export async function removeKvKey(kv: KV, key: string, throughRevision?: number): Promise<number> {
  if (!(kv instanceof Bucket)) {
    // Not a JetStream bucket (no stream to delete from): the KV's own purge is the closest.
    await kv.purge(key);
    return 1;
  }
  return deleteSubjectMessages(kv.jsm, kv.stream, kv.fullKeyName(key), throughRevision);
}
