import { randomUUID } from 'node:crypto';
import {
  type ActorAddress,
  coordSubject,
  kvBucketName,
  decodeErrorHeaders,
  encodeErrorHeaders,
  ErrorReason,
  parseWith,
  TroupeError,
  validateAddress,
} from '@troupe/proto';
import { setTimeout as delay } from 'node:timers/promises';
import { createKv, type Logger, type RefFactory, removeKvKey, storeOutageOf } from '@troupe/actors';
import { type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { type KV } from '@nats-io/kv';
import { z } from 'zod';

/** A durable reminder: post `type`/`payload` to `addr` at `dueAtMs`. */
export const ReminderSchema = z.object({
  id: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'must match [A-Za-z0-9_-]{1,128}'),
  addr: z.object({ kind: z.string(), id: z.string() }),
  dueAtMs: z.number().int().nonnegative(),
  type: z.string().min(1),
  payload: z.unknown(),
});
/** A decoded reminder. */
export type Reminder = z.infer<typeof ReminderSchema>;

const RemindRequestSchema = ReminderSchema.partial({ id: true });

/** Longest single timer (setTimeout caps at 2^31-1 ms); longer waits re-arm. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Durable reminders: stored in KV `troupe_<c>_reminders`, so they survive coordinator restarts
 * and failovers. The leader keeps a timer per reminder; when one is due it is *posted* to the
 * actor (waking it if it sleeps) with dedupe id `reminder-<id>` — a takeover that fires it again
 * inside the dedupe window adds nothing — and then deleted (the delete marker goes too once this
 * leader has seen it).
 */
export class ReminderService {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private sub?: Subscription;
  private watchStop?: () => void;
  /** Reminders fired (metrics). */
  fired = 0;

  /** Whether reminder `id` waits on a timer of this leader. */
  isArmed(id: string): boolean {
    return this.timers.has(id);
  }

  constructor(
    private readonly nc: NatsConnection,
    private readonly cluster: string,
    private readonly kv: KV,
    private readonly refs: RefFactory,
    private readonly log: Logger,
  ) {}

  /** Loads every stored reminder, arms timers, and answers `coord.sched.remind`. */
  async start(): Promise<void> {
    const watcher = await this.kv.watch({ key: '>' });
    this.watchStop = () => watcher.stop();
    void (async () => {
      for await (const e of watcher) {
        if (e.operation !== 'PUT') {
          this.disarm(e.key);
          // The marker has done its work (this leader, the only one with timers, disarmed); a
          // later leader loads no reminder from an absent key. Without this every fired or
          // cancelled reminder left a marker (and the server a subject) for good.
          void removeKvKey(this.kv, e.key, e.revision).catch((err: unknown) =>
            this.log.debug({ err, reminder: e.key }, 'could not remove a reminder marker'),
          );
          continue;
        }
        const parsed = ReminderSchema.safeParse(e.json());
        if (parsed.success) this.arm(parsed.data);
      }
    })().catch((err: unknown) => this.log.error({ err }, 'reminder watch stopped'));
    this.sub = this.nc.subscribe(coordSubject(this.cluster, 'sched', 'remind'), {
      callback: (err, msg) => {
        if (err) return;
        this.store(msg.data).then(
          (r) => msg.respond(JSON.stringify({ id: r.id })),
          (e: unknown) => msg.respond('', { headers: encodeErrorHeaders(e) }),
        );
      },
    });
  }

  /** Stops answering and disarms timers (reminders stay stored for the next leader). */
  stop(): void {
    this.sub?.unsubscribe();
    this.watchStop?.();
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  private async store(data: Uint8Array): Promise<Reminder> {
    let body: unknown;
    try {
      body = JSON.parse(new TextDecoder().decode(data));
    } catch {
      body = undefined;
    }
    const req = parseWith(RemindRequestSchema, body, { prefix: 'remind' });
    validateAddress(req.addr);
    const reminder: Reminder = { ...req, id: req.id ?? randomUUID() };
    try {
      await this.kv.put(reminder.id, JSON.stringify(reminder));
    } catch (err) {
      // A NATS server restarting ("jetstream is not enabled") or a stream electing a leader:
      // answered retryable (the caller asks again), never INTERNAL, which is final for it.
      throw storeOutageOf(err, 'reminders store') ?? err;
    }
    return reminder;
  }

  private arm(r: Reminder): void {
    this.disarm(r.id);
    const delay = Math.max(0, r.dueAtMs - Date.now());
    const t = setTimeout(
      () => {
        if (delay > MAX_TIMER_MS) this.arm(r);
        else void this.fire(r);
      },
      Math.min(delay, MAX_TIMER_MS),
    );
    t.unref();
    this.timers.set(r.id, t);
  }

  private disarm(id: string): void {
    const t = this.timers.get(id);
    if (t) clearTimeout(t);
    this.timers.delete(id);
  }

  private async fire(r: Reminder): Promise<void> {
    this.timers.delete(r.id);
    try {
      await this.refs.refOf(r.addr).post(r.type, r.payload, { dedupeId: `reminder-${r.id}` });
      this.fired++;
      await this.kv.delete(r.id);
    } catch (err) {
      this.log.warn({ err, reminder: r.id }, 'reminder post failed; retrying');
      const t = setTimeout(() => void this.fire(r), 1_000);
      t.unref();
      this.timers.set(r.id, t);
    }
  }
}

/**
 * Cancels a stored reminder: deletes it from the reminders bucket (`kv`, `troupe_<c>_reminders`),
 * and the leader's watch disarms its timer. A reminder that already fired, or never existed, is
 * left as it is. Cancel what will never matter, so that a long job does not leave the leader a
 * timer (and the bucket a record) per task until it fires, hours later.
 */
export async function cancelReminder(kv: KV, id: string): Promise<void> {
  await kv.delete(id);
}

/** Opens (creating if needed) the reminders bucket of `cluster`. */
export async function openRemindersKv(
  nc: NatsConnection,
  cluster: string,
  replicas: number,
): Promise<KV> {
  return createKv(nc, kvBucketName(cluster, 'reminders'), { history: 1, replicas });
}

/**
 * Schedules a durable reminder through the coordinator: at `at`, `type`/`payload` is posted to
 * `addr` (waking it if it sleeps). Returns the reminder id; giving `id` makes the call idempotent.
 *
 * Only the leader answers `coord.sched.remind`, and for a moment during a failover, a reconnect
 * or a stalled leader nobody does: the request is sent again (backing off from 100 ms to 2 s)
 * until `timeoutMs` has passed, then it fails `UNAVAILABLE` (retryable). With an `id` a repeat
 * that the leader did store stores nothing new.
 * @param options.timeoutMs the whole wait. @default 30000
 */
export async function remindAt(
  nc: NatsConnection,
  cluster: string,
  addr: ActorAddress,
  at: Date | number,
  type: string,
  payload: unknown,
  options: { id?: string; timeoutMs?: number } = {},
): Promise<string> {
  validateAddress(addr);
  const dueAtMs = typeof at === 'number' ? at : at.getTime();
  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  const subject = coordSubject(cluster, 'sched', 'remind');
  // An id chosen here keeps the repeats idempotent too.
  const body = JSON.stringify({ addr, dueAtMs, type, payload, id: options.id ?? randomUUID() });
  let pauseMs = 100;
  let last: unknown;
  for (;;) {
    const remaining = deadline - Date.now();
    if (remaining <= 0) break;
    try {
      const reply = await nc.request(subject, body, { timeout: Math.min(remaining, 5_000) });
      const error = decodeErrorHeaders(reply.headers);
      if (error) throw error;
      return reply.json<{ id: string }>().id;
    } catch (err) {
      // The leader's own refusal (a bad request) is final; no leader yet, or a lost request, is not.
      if (err instanceof TroupeError && !err.retryable) throw err;
      last = err;
    }
    await delay(Math.max(0, Math.min(pauseMs, deadline - Date.now())));
    pauseMs = Math.min(2_000, pauseMs * 2);
  }
  // A store outage to the caller (reason `STORE_UNAVAILABLE`): an actor's turn that fails on it
  // is retried without counting towards a dead letter, which for a job actor's batch of task
  // reports would leave the job waiting for ever.
  throw new TroupeError(
    'UNAVAILABLE',
    `no coordinator stored the reminder within ${timeoutMs} ms (${subject}: ${(last as Error | undefined)?.message ?? 'no answer'})`,
    { cause: last, retryable: true, reason: ErrorReason.STORE_UNAVAILABLE },
  );
}
