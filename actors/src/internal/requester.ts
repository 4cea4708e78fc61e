import {
  ClosedConnectionError,
  createInbox,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
  TimeoutError,
} from '@nats-io/transport-node';
import { noopLogger } from '@troupe/proto';
import { watchConnectionStatus } from '../connection-status';
import { WORKING_HEADER } from './ask-keepalive';

/** What {@link Requester.request} resolves to when no subscriber exists on the subject. */
export const NO_RESPONDERS = Symbol('no responders');

/**
 * What {@link Requester.request} rejects with when a watched request's responder showed no sign of
 * life ({@link WORKING_HEADER} messages) for `silenceMs`: its host died, stopped or was cut off.
 */
export class ResponderSilentError extends Error {
  constructor(
    readonly silenceMs: number,
    /**
     * The silence came from a placer holding an ask it had not handed over yet (see
     * {@link LivenessWatch.handOver}), not from a host running it.
     */
    readonly beforeHandOver = false,
  ) {
    super(`no sign of life from the responder for ${silenceMs} ms`);
    this.name = 'ResponderSilentError';
  }
}

/** How a request watches its responder for signs of life. */
export interface LivenessWatch {
  /** Longest silence tolerated between signs of life (or before the first, with `fromStart`). */
  silenceMs: number;
  /**
   * Start watching when the request is sent (the responder is known to send signs), rather than
   * at the first sign (a request that may be answered by something that sends none).
   */
  fromStart: boolean;
  /**
   * A placement request that carries an ask: this watch is the placer's (its signs are
   * `placerSign`), until the ask is handed over — a sign with any other value (the placer's
   * `handed-over`, or the host's first sign, which announces its own interval) — and then
   * `after` watches the host (undefined: nothing does; the ask ends at its deadline).
   */
  handOver?: { placerSign: string; after: LivenessWatch | undefined };
}

interface Pending {
  resolve: (reply: Msg | typeof NO_RESPONDERS) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
  liveness?: LivenessWatch;
  silenceTimer?: NodeJS.Timeout;
  /** What to publish again after a reconnect (a read, which may be answered twice). */
  resend?: { subject: string; data: Uint8Array; headers?: MsgHdrs };
  /** Publishes `resend` again until the responder is heard from (`resendEveryMs`). */
  resendTimer?: NodeJS.Timeout;
}

/**
 * Request/reply over one wildcard reply subscription, for the runtime's hot paths (asks,
 * activation requests). nats.js' own `request()` allocates an `Error` for every request it
 * completes (its `cancel()` builds a "cancelled" error even after a reply), and another two for a
 * no-responders answer: in a profile of activations that was a tenth of the CPU. Here a reply
 * costs a map lookup, and "no responders" is a value, not an exception. Timeouts reject with the
 * nats.js `TimeoutError`, so callers test errors as before.
 */
export class Requester {
  private readonly prefix: string;
  private readonly pending = new Map<string, Pending>();
  private sub?: Subscription;
  private next = 0;
  /** Whether the connection's status events are followed (for requests sent again). */
  private followingStatus = false;

  constructor(private readonly nc: NatsConnection) {
    this.prefix = `${createInbox()}.`;
  }

  /**
   * Publishes `data` to `subject` with a reply subject of ours and resolves with the first
   * reply, or {@link NO_RESPONDERS}; rejects with a `TimeoutError` after `timeoutMs`. With
   * `liveness`, signs of life ({@link WORKING_HEADER} messages) are not replies: they keep the
   * request waiting, and a silence longer than `liveness.silenceMs` rejects it with a
   * {@link ResponderSilentError}.
   *
   * `resendOnReconnect` (for requests that may be answered twice: reads, and others the responder
   * takes once whatever the copies, such as activation requests): the request is published again
   * when the connection comes back while it waits. A request in flight when its server went away
   * (a restart, a crash) has lost its answer for good — nats.js keeps it waiting to its timeout,
   * which after every NATS server restart held an actor's inbox read for 5 s (chaos).
   *
   * `resendEveryMs` (with `resendOnReconnect`): the request is also published again each time
   * this long passes without hearing from the responder (an answer, or a sign of life), within
   * the same `timeoutMs`. A read sent to a stream that has no leader yet (its servers still
   * electing one after a restart) is not answered later: it is dropped, and only a new one is
   * answered once the stream is led again. So is a request to a responder whose connection was
   * moving to another server: it was subscribed nowhere for a moment.
   */
  request(
    subject: string,
    data: Uint8Array,
    options: {
      timeoutMs: number;
      headers?: MsgHdrs;
      liveness?: LivenessWatch;
      resendOnReconnect?: boolean;
      resendEveryMs?: number;
    },
  ): Promise<Msg | typeof NO_RESPONDERS> {
    if (!this.sub) {
      this.sub = this.nc.subscribe(`${this.prefix}*`, {
        callback: (err, msg) => {
          if (!err) this.onReply(msg);
        },
      });
      // Nothing answers once the connection is closed: waiting requests fail now, not at their
      // timeouts, whose timers would keep a process that has shut down alive until then.
      void this.nc.closed().then(() => this.failAll());
    }
    const token = (++this.next).toString(36);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => {
          this.settle(token);
          reject(new TimeoutError());
        },
        Math.max(1, options.timeoutMs),
      );
      const pending: Pending = { resolve, reject, timer };
      if (options.resendOnReconnect) {
        pending.resend = {
          subject,
          data,
          ...(options.headers ? { headers: options.headers } : {}),
        };
        this.followStatus();
        if (options.resendEveryMs !== undefined && options.resendEveryMs < options.timeoutMs) {
          pending.resendTimer = setInterval(
            () => this.resend(token, pending),
            Math.max(1, options.resendEveryMs),
          );
        }
      }
      if (options.liveness) {
        pending.liveness = options.liveness;
        if (options.liveness.fromStart) this.watch(token, pending);
      }
      this.pending.set(token, pending);
      try {
        this.nc.publish(subject, data, {
          reply: this.prefix + token,
          ...(options.headers ? { headers: options.headers } : {}),
        });
      } catch (err) {
        this.settle(token);
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  /** Sends the waiting requests marked `resendOnReconnect` again at each reconnect. */
  private followStatus(): void {
    if (this.followingStatus) return;
    this.followingStatus = true;
    // resendAll catches its own errors: nothing for the watch's logger to report.
    watchConnectionStatus(
      this.nc,
      (s) => {
        if (s.type === 'reconnect') this.resendAll();
      },
      noopLogger,
    );
  }

  private resendAll(): void {
    for (const [token, p] of this.pending) this.resend(token, p);
  }

  private resend(token: string, p: Pending): void {
    if (!p.resend) return;
    try {
      this.nc.publish(p.resend.subject, p.resend.data, {
        reply: this.prefix + token,
        ...(p.resend.headers ? { headers: p.resend.headers } : {}),
      });
    } catch {
      // Closed or reconnecting: the reconnect sends it again, or the request ends at its timeout.
    }
  }

  private onReply(msg: Msg): void {
    const token = msg.subject.slice(this.prefix.length);
    const p = this.pending.get(token);
    if (!p) return; // late (timed out) or duplicate
    // An answer carries data or an error status; only a sign of life is empty with our header.
    const sign = msg.data.length === 0 ? msg.headers?.get(WORKING_HEADER) : undefined;
    if (sign) {
      // The responder has the request: no copy is needed any more.
      if (p.resendTimer) clearInterval(p.resendTimer);
      p.resendTimer = undefined;
      const handOver = p.liveness?.handOver;
      if (handOver && sign !== handOver.placerSign) {
        // The ask is with a host now: its watch, or none.
        p.liveness = handOver.after;
        if (!p.liveness && p.silenceTimer) clearTimeout(p.silenceTimer);
      }
      if (p.liveness) this.watch(token, p);
      return;
    }
    this.settle(token);
    // The server's "no responders" status: an empty message with status 503.
    if (msg.data.length === 0 && msg.headers?.code === 503) p.resolve(NO_RESPONDERS);
    else p.resolve(msg);
  }

  /** (Re)arms the silence timer of a watched request. */
  private watch(token: string, p: Pending): void {
    const liveness = p.liveness;
    if (!liveness) return;
    if (p.silenceTimer) clearTimeout(p.silenceTimer);
    p.silenceTimer = setTimeout(() => {
      if (!this.pending.has(token)) return;
      this.settle(token);
      p.reject(new ResponderSilentError(liveness.silenceMs, liveness.handOver !== undefined));
    }, liveness.silenceMs);
  }

  private failAll(): void {
    for (const [token, p] of [...this.pending]) {
      this.settle(token);
      p.reject(new ClosedConnectionError());
    }
  }

  /** Forgets a request and clears its timers. */
  private settle(token: string): void {
    const p = this.pending.get(token);
    if (!p) return;
    this.pending.delete(token);
    clearTimeout(p.timer);
    if (p.silenceTimer) clearTimeout(p.silenceTimer);
    if (p.resendTimer) clearInterval(p.resendTimer);
  }
}

const requesters = new WeakMap<NatsConnection, Requester>();

/**
 * The connection's one {@link Requester}, made on first use: every part of a process that sends
 * requests on a connection (asks, stream publishes, KV writes) shares its reply subscription.
 */
export function requesterOf(nc: NatsConnection): Requester {
  let r = requesters.get(nc);
  if (!r) {
    r = new Requester(nc);
    requesters.set(nc, r);
  }
  return r;
}
