import { JOB_STORE_TIMEOUT_MS } from './job-store';
import { delay, eventsStreamName, eventsSubject, eventsSubjectFilter, Header } from '@troupe/proto';
import {
  deleteSubjectMessages,
  ensureStream,
  publishToStream,
  PULL_EXPIRES_MS,
  requesterOf,
} from '@troupe/actors';
import { headers as natsHeaders, nanos, type NatsConnection } from '@nats-io/transport-node';
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type ConsumerInfo,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { type JobEventRecord, JobEventRecordSchema } from './job-event';
import { whileTransient } from './while-transient';

/** Options of {@link JobEventLog.open}. */
export interface JobEventLogOptions {
  /** Replicas of the events stream. @default 1 */
  replicas?: number;
  /**
   * Window in which a re-sent event (same job and sequence, after a crash before the job actor
   * committed) is dropped by the stream.
   * @default 600000
   */
  dedupeWindowMs?: number;
  /** How long events are kept. @default 0 (forever) */
  maxAgeMs?: number;
}

/** Options of {@link JobEventLog.read}. */
export interface ReadEventsOptions {
  /** First sequence to deliver (0 and 1 both mean the beginning). @default 1 */
  fromSequence?: number;
  /** Keep following live events until JOB_FINISHED; false stops at the current end. @default true */
  follow?: boolean;
  /** Stops the read (the iterator ends). */
  signal?: AbortSignal;
}

/**
 * The job event log: JetStream stream `TROUPE_<C>_EVENTS` on `troupe.<c>.events.<jobId>`, one
 * subject per job. The job actor is the only writer. Each event carries its per-job sequence
 * number; a stream message holds one or several consecutive events ({@link batchEvents}), with
 * its last event's sequence and type in the {@link Header.EVENT_SEQ} and {@link Header.EVENT_TYPE}
 * headers and `Nats-Msg-Id` `<jobId>:<seq>` (one event) or `<jobId>:<first>-<last>`, so a message
 * re-sent after a crash is dropped by the stream. Readers replay from any sequence and follow
 * live events with no gaps and no duplicates: they drop any sequence already seen, which also
 * covers a re-sent message grouped differently from the one stored first.
 */
export class JobEventLog {
  private constructor(
    readonly cluster: string,
    private readonly jsm: JetStreamManager,
    private readonly js: JetStreamClient,
    /** Appends go through the connection's `Requester` (see `publishToStream`). */
    private readonly nc: NatsConnection,
  ) {}

  /** Creates the events stream if needed (idempotent) and returns the log. */
  static async open(
    nc: NatsConnection,
    cluster: string,
    options: JobEventLogOptions = {},
  ): Promise<JobEventLog> {
    const jsm = await jetstreamManager(nc);
    await ensureStream(jsm, {
      name: eventsStreamName(cluster),
      subjects: [eventsSubjectFilter(cluster)],
      replicas: options.replicas ?? 1,
      duplicateWindowMs: options.dedupeWindowMs ?? 600_000,
      maxAgeMs: options.maxAgeMs ?? 0,
      allowDirect: true,
    });
    return new JobEventLog(cluster, jsm, jetstream(nc, { timeout: JOB_STORE_TIMEOUT_MS }), nc);
  }

  /**
   * Deletes a job's events for good, message by message (`deleteSubjectMessages`: a filtered
   * purge would make other jobs' watchers skip events). Returns how many events went: numbered
   * 1..n without gaps, the last one's sequence (a message holds one or several).
   */
  async deleteJob(jobId: string): Promise<number> {
    const events = await this.lastSequence(jobId);
    const messages = await deleteSubjectMessages(
      this.jsm,
      eventsStreamName(this.cluster),
      eventsSubject(this.cluster, jobId),
    );
    return messages === 0 ? 0 : events;
  }

  /**
   * Appends events (already numbered by the caller) in order, several to a stream message (see
   * {@link batchEvents}). Publishes are pipelined on one connection, so the stream keeps their
   * order; a message whose id is already stored is dropped.
   */
  async append(events: readonly JobEventRecord[]): Promise<void> {
    const requester = requesterOf(this.nc);
    await Promise.all(
      batchEvents(events).map(({ events: batch, body }) => {
        const first = batch[0]!;
        const last = batch[batch.length - 1]!;
        const h = natsHeaders();
        h.set(Header.EVENT_SEQ, String(last.sequence));
        h.set(Header.EVENT_TYPE, last.type);
        h.set(
          Header.MSG_ID,
          batch.length === 1
            ? `${first.jobId}:${first.sequence}`
            : `${first.jobId}:${first.sequence}-${last.sequence}`,
        );
        // An append is on the job actor's turn, as the job store's writes are: a publish lost
        // while the stream elects its leader is sent again sooner (JOB_STORE_TIMEOUT_MS).
        return publishToStream(requester, eventsSubject(this.cluster, first.jobId), body, h, {
          timeoutMs: JOB_STORE_TIMEOUT_MS,
        });
      }),
    );
  }

  /** The sequence of the job's last stored event; 0 when it has none. */
  async lastSequence(jobId: string): Promise<number> {
    const m = await this.jsm.direct
      .getMessage(eventsStreamName(this.cluster), {
        last_by_subj: eventsSubject(this.cluster, jobId),
      })
      .catch(() => null);
    if (!m) return 0;
    const seq = Number(m.header?.get(Header.EVENT_SEQ) ?? '0');
    return Number.isFinite(seq) ? seq : 0;
  }

  /**
   * The job's events from `fromSequence`, in order, each exactly once: past events first, then
   * (with `follow`) live ones until the last JOB_FINISHED (a resumed job has several) or the
   * signal aborts.
   */
  async *read(jobId: string, options: ReadEventsOptions = {}): AsyncGenerator<JobEventRecord> {
    const from = Math.max(1, options.fromSequence ?? 1);
    const follow = options.follow ?? true;
    const signal = options.signal;
    if (signal?.aborted) return;
    const stream = eventsStreamName(this.cluster);
    // Nothing left to deliver of a finished job (a watcher resuming after its last event).
    const tail = await this.jsm.direct
      .getMessage(stream, { last_by_subj: eventsSubject(this.cluster, jobId) })
      .catch(() => null);
    if (tail) {
      const lastSeq = Number(tail.header?.get(Header.EVENT_SEQ) ?? '0');
      const lastType = tail.header?.get(Header.EVENT_TYPE);
      if (lastSeq < from && (lastType === 'JOB_FINISHED' || !follow)) return;
    } else if (!follow) {
      return;
    }
    const subject = eventsSubject(this.cluster, jobId);
    let last = from - 1;
    let lastType: string | undefined;
    // Stream sequence after the last message delivered: where a replacement consumer starts.
    let resumeSeq = 0;
    for (let first = true; ; first = false) {
      // An explicit consumer with the singular filter_subject: nats-server 2.9 ignores the
      // filter of ordered consumers created with `filterSubjects` (PLATFORM-NOTES "Trap").
      const config = {
        filter_subject: subject,
        ...(resumeSeq > 0
          ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: resumeSeq }
          : { deliver_policy: DeliverPolicy.All }),
        ack_policy: AckPolicy.None,
        inactive_threshold: nanos(60_000),
        mem_storage: true,
      };
      let info: ConsumerInfo;
      if (first) {
        info = await this.jsm.consumers.add(stream, config);
      } else {
        // A replacement waits for the stream to answer again (a new leader after a server loss).
        // Its creation can stall for tens of seconds after a server loss while the stream already
        // answers direct reads: events stored meanwhile are followed by those until it is back.
        const adding = whileTransient(() => this.jsm.consumers.add(stream, config), signal);
        let added = false;
        adding.then(
          () => (added = true),
          () => (added = true),
        );
        for (;;) {
          for (;;) {
            const m = await this.jsm.direct
              .getMessage(stream, { next_by_subj: subject, seq: Math.max(1, resumeSeq) })
              .catch(() => null);
            if (!m) break;
            resumeSeq = m.seq + 1;
            for (const event of decodeEvents(m)) {
              if (event.sequence <= last) continue;
              last = event.sequence;
              lastType = event.type;
              yield event;
            }
          }
          // The end: the job's last JOB_FINISHED, nothing stored after it.
          if (lastType === 'JOB_FINISHED' && !signal?.aborted) {
            void adding
              .then((i) => this.jsm.consumers.delete(stream, i.name))
              .catch(() => undefined);
            return;
          }
          if (added || signal?.aborted) break;
          await Promise.race([
            adding.catch(() => undefined),
            delay(250, undefined, { unref: true }),
          ]);
        }
        if (signal?.aborted) {
          void adding.then((i) => this.jsm.consumers.delete(stream, i.name)).catch(() => undefined);
          return;
        }
        info = await adding;
      }
      const consumer = await this.js.consumers.get(stream, info.name);
      const messages = await consumer.consume({ max_messages: 512, expires: PULL_EXPIRES_MS });
      const stop = () => void messages.close().catch(() => undefined);
      signal?.addEventListener('abort', stop, { once: true });
      // The consumer lives on one server: when that server is lost, the pulls get no heartbeat
      // (or no consumer) and nothing more would arrive. A new consumer resumes where this one
      // stopped; the sequence check below drops anything delivered twice.
      let lost = false;
      void (async () => {
        for await (const st of messages.status()) {
          if (
            (st.type === 'heartbeats_missed' && st.count >= 2) ||
            st.type === 'consumer_not_found' ||
            st.type === 'consumer_deleted' ||
            st.type === 'no_responders'
          ) {
            lost = true;
            stop();
            return;
          }
        }
      })().catch(() => undefined);
      // Not every loss shows in the status (a pull the new leader answers, a consumer left behind
      // on a replica): a watchdog looks for an event stored after the last one delivered and
      // declares the consumer lost when the next look finds it still undelivered (2-3 s).
      let storedUndelivered = 0;
      const watchdog = setInterval(() => {
        void this.jsm.direct
          .getMessage(stream, { next_by_subj: subject, seq: Math.max(1, resumeSeq) })
          .then((m) => {
            if (lost || !m) {
              storedUndelivered = 0;
              return;
            }
            if (storedUndelivered > 0 && storedUndelivered >= resumeSeq) {
              lost = true;
              stop();
              return;
            }
            storedUndelivered = m.seq;
          })
          .catch(() => undefined);
      }, LOSS_CHECK_MS);
      watchdog.unref();
      try {
        if (first && !follow && info.num_pending === 0) return;
        for await (const m of messages) {
          resumeSeq = m.seq + 1;
          const events = decodeEvents(m);
          for (const event of events) {
            if (event.sequence <= last) continue;
            last = event.sequence;
            lastType = event.type;
            yield event;
          }
          // The end, unless the job was resumed after it (a later JOB_RESUMED is stored); also
          // when a replacement consumer delivers again the JOB_FINISHED already given.
          const end = events[events.length - 1];
          if (end?.type === 'JOB_FINISHED' && end.sequence === last && m.info.pending === 0) {
            return;
          }
          if (!follow && m.info.pending === 0) return;
        }
        if (signal?.aborted || !lost) return;
      } finally {
        clearInterval(watchdog);
        signal?.removeEventListener('abort', stop);
        stop();
        // Not awaited when lost: a request to the old consumer's stream can wait out its timeout.
        const deleting = this.jsm.consumers.delete(stream, info.name).catch(() => undefined);
        if (!lost) await deleting;
      }
    }
  }
}

/** How often a following reader checks that its consumer still delivers what is stored. */
const LOSS_CHECK_MS = 1_000;

/**
 * Most events one stream message holds, and most bytes of their JSON (a message is never larger
 * than the server's `max_payload`, 1 MiB by default, and a reader's batch stays small).
 */
export const MAX_EVENTS_PER_MESSAGE = 256;
export const MAX_EVENT_MESSAGE_BYTES = 64 * 1024;

/**
 * Groups events into the stream messages that store them: consecutive events of one job, up to
 * {@link MAX_EVENTS_PER_MESSAGE} and {@link MAX_EVENT_MESSAGE_BYTES}. A job-level event (any
 * type but `TASK_*`) is always the last of its message, so the message's `Troupe-Event-Type`
 * header names it: the cancellation watch and the end-of-job check read only that header. A
 * message of one event is that event's JSON object; of several, a JSON array of them.
 *
 * Per message, not per event: at a job's concurrency of hundreds, three events per task were
 * three stream publishes, three acknowledgements and, for every watcher and the job's
 * cancellation watch, three deliveries — a fifth of the job engine's NATS messages.
 */
export function batchEvents(
  events: readonly JobEventRecord[],
): { events: JobEventRecord[]; body: Uint8Array }[] {
  const out: { events: JobEventRecord[]; body: Uint8Array }[] = [];
  let batch: JobEventRecord[] = [];
  let parts: string[] = [];
  let bytes = 0;
  const close = () => {
    if (batch.length === 0) return;
    const json = batch.length === 1 ? parts[0]! : `[${parts.join(',')}]`;
    out.push({ events: batch, body: Buffer.from(json, 'utf8') });
    batch = [];
    parts = [];
    bytes = 0;
  };
  for (const e of events) {
    const json = JSON.stringify(e);
    const size = Buffer.byteLength(json, 'utf8') + 1;
    if (
      batch.length > 0 &&
      (batch[0]!.jobId !== e.jobId ||
        batch.length >= MAX_EVENTS_PER_MESSAGE ||
        bytes + size > MAX_EVENT_MESSAGE_BYTES)
    ) {
      close();
    }
    batch.push(e);
    parts.push(json);
    bytes += size;
    if (!e.type.startsWith('TASK_')) close();
  }
  close();
  return out;
}

/** The events a stream message holds (one object or an array); invalid entries are dropped. */
function decodeEvents(m: Pick<JsMsg, 'json'>): JobEventRecord[] {
  let body: unknown;
  try {
    body = m.json();
  } catch {
    return [];
  }
  const out: JobEventRecord[] = [];
  for (const item of Array.isArray(body) ? body : [body]) {
    const parsed = JobEventRecordSchema.safeParse(item);
    if (parsed.success) out.push(parsed.data);
  }
  return out;
}
