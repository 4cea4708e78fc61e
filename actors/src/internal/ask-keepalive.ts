import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { type Respondable } from './core-item';

/**
 * Header of a "still working on it" message: sent by the host to a long ask's reply subject while
 * the ask waits in the mailbox or runs. It carries no answer; the asker's {@link Requester} takes
 * it as a sign of life and keeps waiting.
 */
export const WORKING_HEADER = 'Troupe-Working';

/** Default interval between two signs of life for one ask. */
export const DEFAULT_ASK_KEEPALIVE_MS = 5_000;

/**
 * An asker gives up on a long ask when the host shows no sign of life for this many intervals:
 * the first sign comes after one to one and a half intervals, and the margin covers an event-loop
 * stall on a busy host.
 */
export const SILENCE_INTERVALS = 4;

/**
 * Asks shorter than this many intervals are not watched: they end at their own deadline soon
 * enough, and watching them would cost the host a timer entry per ask on the hot path.
 */
export const LONG_ASK_INTERVALS = 12;

/**
 * The shortest interval an asker may ask signs of life at (`AskOptions.livenessMs`): a host
 * sends at most this often per ask, whatever an envelope asks for.
 */
export const MIN_ASK_KEEPALIVE_MS = 100;

/**
 * Interval of the signs of life a host sends while it starts an activation a placer asked for
 * (`host.<id>.activate`): the placer gives up on a host silent for {@link SILENCE_INTERVALS} of
 * them instead of waiting out its activation timeout (15 s) for a host killed with the request.
 */
export const ACTIVATION_KEEPALIVE_MS = 1_000;

/**
 * How long a placer waits to hear from a host (an answer or its first sign of life, which comes
 * within one and a half {@link ACTIVATION_KEEPALIVE_MS}) before it sends the activation request
 * again; once more at twice this, and the silence watch ends it at {@link SILENCE_INTERVALS}
 * intervals. A host takes a copy as the same request (same actor and epoch: the same activation;
 * a handed-over ask by its id: the same ask). A request sent while the host's connection moved to
 * another server (a NATS server restarting) was dropped, and the placer waited the whole 4 s
 * silence for it (chaos run 22, seed 9210).
 */
export const ACTIVATION_RESEND_MS = 1_500;

/**
 * Header of an activation request (`coord.sched.activate`) whose requester watches the placer:
 * the interval, in ms, at which it wants signs of life while the placer works on it.
 */
export const KEEPALIVE_HEADER = 'Troupe-Keepalive';

/** Whether an ask of `timeoutMs` is watched for signs of life (see {@link LONG_ASK_INTERVALS}). */
export function isLongAsk(timeoutMs: number, keepaliveMs: number): boolean {
  return timeoutMs >= keepaliveMs * LONG_ASK_INTERVALS;
}

interface Tracked {
  reply: string;
  deadline: number;
  lastSentAt: number;
  intervalMs: number;
}

/**
 * The host side of long-ask liveness. Every long ask an activation accepts is tracked from the
 * moment it is queued until it is answered (or its deadline passes), and every `intervalMs` a
 * {@link WORKING_HEADER} message goes to its reply subject. When the host dies, is stopped or is
 * cut off, the signs stop and the asker fails the ask with UNAVAILABLE after
 * {@link SILENCE_INTERVALS} intervals instead of waiting out a deadline of minutes.
 *
 * An asker that watches an ask at an interval of its own (`AskOptions.livenessMs`, whatever the
 * ask's length) says so in its envelope, and that ask's signs come at that interval.
 *
 * One timer serves all tracked asks, ticking at half the shortest interval tracked; it runs only
 * while some are tracked, and never keeps the process alive.
 */
export class AskKeepalive {
  private readonly tracked = new Set<Tracked>();
  private timer: NodeJS.Timeout | undefined;
  /** The interval the running timer ticks at half of. */
  private timerIntervalMs = Infinity;

  constructor(
    private readonly nc: NatsConnection,
    readonly intervalMs: number,
  ) {}

  /** Asks currently tracked (for tests and stats). */
  get size(): number {
    return this.tracked.size;
  }

  /**
   * Tracks the ask answered through `msg` when its deadline is far enough away to be a long ask,
   * and returns the respondable to answer it through (answering stops the signs). `announce`
   * sends the first sign at once: for an ask handed over with an activation, whose asker only
   * starts watching when it hears from the host. `askedIntervalMs`: the interval the asker
   * watches this ask at (its envelope's `k`), when it chose one; such an ask is tracked whatever
   * its length.
   */
  track(
    msg: Respondable,
    deadline: number | undefined,
    announce = false,
    askedIntervalMs?: number,
  ): Respondable {
    const reply = msg.reply;
    if (!reply || deadline === undefined) return msg;
    const intervalMs =
      askedIntervalMs !== undefined && Number.isFinite(askedIntervalMs)
        ? Math.max(MIN_ASK_KEEPALIVE_MS, askedIntervalMs)
        : this.intervalMs;
    const now = Date.now();
    const remaining = deadline - now;
    // An ask that ends before a sign would be due needs none. (The asker watches only asks of
    // LONG_ASK_INTERVALS or more, but transit or a reconnect may have eaten much of that.)
    if (remaining <= intervalMs) return msg;
    const entry: Tracked = { reply, deadline, lastSentAt: now, intervalMs };
    if (announce) this.send(entry, now);
    this.tracked.add(entry);
    if (intervalMs < this.timerIntervalMs) {
      clearInterval(this.timer);
      this.timer = this.startTimer(intervalMs);
    }
    return {
      reply,
      respond: (data, opts) => {
        this.tracked.delete(entry);
        return msg.respond(data, opts);
      },
    };
  }

  /** Stops the timer and forgets every tracked ask (on shutdown). */
  close(): void {
    this.tracked.clear();
    this.stopTimer();
  }

  private startTimer(intervalMs: number): NodeJS.Timeout {
    // Half-interval ticks: an ask hears from us between one and one and a half intervals apart.
    this.timerIntervalMs = intervalMs;
    const timer = setInterval(() => this.tick(), Math.max(1, Math.floor(intervalMs / 2)));
    timer.unref();
    return timer;
  }

  private stopTimer(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.timerIntervalMs = Infinity;
  }

  private tick(): void {
    const now = Date.now();
    for (const entry of this.tracked) {
      if (now >= entry.deadline) this.tracked.delete(entry);
      else if (now - entry.lastSentAt >= entry.intervalMs) this.send(entry, now);
    }
    if (this.tracked.size === 0) this.stopTimer();
  }

  private send(entry: Tracked, now: number): void {
    entry.lastSentAt = now;
    const h = natsHeaders();
    h.set(WORKING_HEADER, String(entry.intervalMs));
    try {
      this.nc.publish(entry.reply, new Uint8Array(), { headers: h });
    } catch {
      // A closed connection: the asker will hear nothing more, which is the truth.
      this.tracked.delete(entry);
    }
  }
}
