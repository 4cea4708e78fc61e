import { randomBytes } from 'node:crypto';
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { type NatsConnection } from '@nats-io/transport-node';
import { LazyStream, type Logger, storeOutageOf } from '@troupe/actors';
import {
  ErrorCode,
  fromAbortSignal,
  trajectoryStreamName,
  trajectorySubject,
  trajectorySubjectFilter,
  TroupeError,
} from '@troupe/proto';
import {
  type TrajectoryEvent,
  TrajectoryEventSchema,
  TrajectoryEventType,
} from './trajectory-event';

/** How often a run-end wait also reads the session's last stored event. */
const RUN_END_RECHECK_MS = 10_000;

/** Options of {@link TrajectoryStore}. */
export interface TrajectoryStoreOptions {
  /** An open NATS connection (not closed by the store). */
  connection: NatsConnection;
  /** Cluster name. */
  cluster: string;
  /** Stream replicas. @default 1 */
  replicas?: number;
  /** Window in which a repeated event id is dropped. @default 3600000 */
  duplicateWindowMs?: number;
  /** Warned when the stream exists with other settings (it is used as it is). @default none */
  logger?: Logger;
}

/**
 * Agent trajectories in JetStream: stream `TROUPE_<C>_TRAJECTORY`, one subject per session
 * (`troupe.<c>.trajectory.<sessionId>`). Events are published with `Nats-Msg-Id`
 * `<sessionId>:<seq>:<epoch>`, so a retried publish is stored once while work redone by a newer
 * activation after a crash is kept alongside (readers take the latest epoch per seq).
 */
export class TrajectoryStore {
  private readonly nc: NatsConnection;
  private readonly js: JetStreamClient;
  private readonly cluster: string;
  private readonly stream: LazyStream;

  constructor(options: TrajectoryStoreOptions) {
    this.nc = options.connection;
    this.js = jetstream(options.connection);
    this.cluster = options.cluster;
    this.stream = new LazyStream({
      connection: options.connection,
      spec: {
        name: trajectoryStreamName(options.cluster),
        subjects: [trajectorySubjectFilter(options.cluster)],
        replicas: options.replicas ?? 1,
        duplicateWindowMs: options.duplicateWindowMs ?? 3_600_000,
      },
      ...(options.logger ? { logger: options.logger } : {}),
    });
  }

  /** Creates the stream if missing (idempotent; called by every other method). */
  ensure(): Promise<JetStreamManager> {
    return this.stream.ensure();
  }

  /** Appends one event; resolves once JetStream stored it. */
  async append(event: TrajectoryEvent): Promise<void> {
    await this.ensure();
    try {
      await this.js.publish(
        trajectorySubject(this.cluster, event.sessionId),
        JSON.stringify(event),
        {
          msgID: `${event.sessionId}:${event.seq}:${event.epoch}`,
        },
      );
    } catch (err) {
      // Not reachable now (a stream electing a leader): the agent turn is retried without
      // counting an attempt; anything else fails the turn.
      const outage = storeOutageOf(err, `trajectory store of ${event.sessionId}`);
      if (outage) throw outage;
      throw new TroupeError(
        ErrorCode.UNAVAILABLE,
        `cannot append to the trajectory of ${event.sessionId}`,
        { cause: err },
      );
    }
  }

  /**
   * Every stored event of a session, in stream order, with superseded ones (same seq, older
   * epoch) removed.
   */
  async read(
    sessionId: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<TrajectoryEvent[]> {
    const jsm = await this.ensure();
    const subject = trajectorySubject(this.cluster, sessionId);
    let last;
    try {
      last = await jsm.streams.getMessage(this.stream.name, { last_by_subj: subject });
    } catch {
      return [];
    }
    if (!last) return [];
    // An explicit consumer with the singular filter_subject: ordered consumers ignore filters on
    // nats-server 2.9 (PLATFORM-NOTES).
    const name = `traj_${randomBytes(6).toString('hex')}`;
    await jsm.consumers.add(this.stream.name, {
      name,
      filter_subject: subject,
      deliver_policy: DeliverPolicy.All,
      ack_policy: AckPolicy.None,
      inactive_threshold: 60_000_000_000,
    });
    const events: TrajectoryEvent[] = [];
    try {
      const consumer = await this.js.consumers.get(this.stream.name, name);
      let lastSeq = 0;
      while (lastSeq < last.seq) {
        if (options.signal?.aborted) throw fromAbortSignal(options.signal);
        const batch = await consumer.fetch({ max_messages: 256, expires: 2_000 });
        let got = 0;
        for await (const m of batch) {
          got++;
          lastSeq = m.seq;
          if (m.subject !== subject) continue;
          const parsed = TrajectoryEventSchema.safeParse(m.json());
          if (parsed.success) events.push(parsed.data);
          if (lastSeq >= last.seq) break;
        }
        if (got === 0) {
          throw new TroupeError(ErrorCode.UNAVAILABLE, `trajectory of ${sessionId}: read stalled`);
        }
      }
    } finally {
      await jsm.consumers.delete(this.stream.name, name).catch(() => undefined);
    }
    return latestPerSeq(events);
  }

  /**
   * Waits for the `run_end` event of `runId` in session `sessionId` (already stored, or to come)
   * and returns its `data.result`. Events arrive over a core subscription (the fast path); the
   * session's last stored event is also read when the wait starts and every `recheckMs`, so an end
   * published while this connection was away (a reconnect drops core messages) is still found.
   */
  async waitForRunEnd(
    sessionId: string,
    runId: string,
    options: { signal?: AbortSignal; recheckMs?: number } = {},
  ): Promise<unknown> {
    const jsm = await this.ensure();
    const subject = trajectorySubject(this.cluster, sessionId);
    const endOf = (e: unknown): { result: unknown } | undefined => {
      const parsed = TrajectoryEventSchema.safeParse(e);
      return parsed.success &&
        parsed.data.type === TrajectoryEventType.RUN_END &&
        parsed.data.runId === runId
        ? { result: parsed.data.data['result'] }
        : undefined;
    };
    const lastStored = async (): Promise<{ result: unknown } | undefined> => {
      try {
        const last = await jsm.streams.getMessage(this.stream.name, { last_by_subj: subject });
        return last ? endOf(last.json()) : undefined;
      } catch {
        return undefined; // nothing stored yet, or not reachable now: the next check tries again
      }
    };
    const { signal } = options;
    if (signal?.aborted) throw fromAbortSignal(signal);
    // Subscribe first, then look at what is stored, so an end published in between is not missed.
    const sub = this.nc.subscribe(subject);
    return new Promise<unknown>((resolve, reject) => {
      let settled = false;
      const finish = (settle: () => void): void => {
        if (settled) return;
        settled = true;
        clearInterval(timer);
        signal?.removeEventListener('abort', onAbort);
        sub.unsubscribe();
        settle();
      };
      const check = (): void => {
        void lastStored().then((end) => end && finish(() => resolve(end.result)));
      };
      const onAbort = (): void => finish(() => reject(fromAbortSignal(signal!)));
      signal?.addEventListener('abort', onAbort, { once: true });
      const timer = setInterval(check, options.recheckMs ?? RUN_END_RECHECK_MS);
      timer.unref();
      check();
      void (async () => {
        for await (const m of sub) {
          // Every event of the session passes by; only a run end is worth decoding.
          if (!m.string().includes(`"${TrajectoryEventType.RUN_END}"`)) continue;
          let event: unknown;
          try {
            event = m.json();
          } catch {
            continue;
          }
          const end = endOf(event);
          if (end) return finish(() => resolve(end.result));
        }
        finish(() =>
          reject(
            new TroupeError(
              ErrorCode.UNAVAILABLE,
              `trajectory subscription of ${sessionId} closed`,
            ),
          ),
        );
      })();
    });
  }
}

/** Drops events superseded by a later epoch's event with the same seq; keeps stream order. */
export function latestPerSeq(events: readonly TrajectoryEvent[]): TrajectoryEvent[] {
  const latest = new Map<number, number>();
  for (const e of events) latest.set(e.seq, Math.max(latest.get(e.seq) ?? -1, e.epoch));
  const kept = events.filter((e) => latest.get(e.seq) === e.epoch);
  return kept.sort((a, b) => a.seq - b.seq);
}
