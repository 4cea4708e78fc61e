import {
  createInbox,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
  TimeoutError,
} from '@nats-io/transport-node';

/** What {@link Requester.request} resolves to when no subscriber exists on the subject. */
export const NO_RESPONDERS = Symbol('no responders');

interface Pending {
  resolve: (reply: Msg | typeof NO_RESPONDERS) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
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

  constructor(private readonly nc: NatsConnection) {
    this.prefix = `${createInbox()}.`;
  }

  /**
   * Publishes `data` to `subject` with a reply subject of ours and resolves with the first
   * reply, or {@link NO_RESPONDERS}; rejects with a `TimeoutError` after `timeoutMs`.
   */
  request(
    subject: string,
    data: Uint8Array,
    options: { timeoutMs: number; headers?: MsgHdrs },
  ): Promise<Msg | typeof NO_RESPONDERS> {
    this.sub ??= this.nc.subscribe(`${this.prefix}*`, {
      callback: (err, msg) => {
        if (!err) this.onReply(msg);
      },
    });
    const token = (++this.next).toString(36);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => {
          this.pending.delete(token);
          reject(new TimeoutError());
        },
        Math.max(1, options.timeoutMs),
      );
      this.pending.set(token, { resolve, reject, timer });
      try {
        this.nc.publish(subject, data, {
          reply: this.prefix + token,
          ...(options.headers ? { headers: options.headers } : {}),
        });
      } catch (err) {
        clearTimeout(timer);
        this.pending.delete(token);
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  private onReply(msg: Msg): void {
    const token = msg.subject.slice(this.prefix.length);
    const p = this.pending.get(token);
    if (!p) return; // late (timed out) or duplicate
    this.pending.delete(token);
    clearTimeout(p.timer);
    // The server's "no responders" status: an empty message with status 503.
    if (msg.data.length === 0 && msg.headers?.code === 503) p.resolve(NO_RESPONDERS);
    else p.resolve(msg);
  }
}
