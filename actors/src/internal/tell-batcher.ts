import { type Logger, TroupeError } from '@troupe/proto';
import { type NatsConnection } from '@nats-io/transport-node';
import { type CoreEnvelope } from './protocol';

/** Most tells one NATS message carries. */
export const MAX_TELLS_PER_MESSAGE = 256;
/** Most bytes of envelopes one batched message carries (a larger tell travels alone). */
export const MAX_TELL_BATCH_BYTES = 64 * 1024;

/** The key of a tell batch on the wire: `{"b": [envelope, …]}`. */
export const TELL_BATCH_KEY = 'b';

interface Pending {
  texts: string[];
  bytes: number;
}

/**
 * Tells sent in one go, per subject. A tell's envelope is encoded when it is made (an oversized
 * payload or a closed connection fails the caller, as a publish would), and the tells made to one
 * actor before the current task ends travel in one NATS message, `{"b": [envelope, …]}` (a lone
 * tell as its plain envelope). NATS costs per message, not per byte, at these sizes: a sender in
 * a loop sends a few messages instead of thousands, and the activation reads them as one batch.
 *
 * Order is kept: tells to one subject are sent in the order made, and anything else this process
 * sends to that subject (an ask, a mail hint) first flushes the tells made before it
 * ({@link flush}). Delivery stays at most once: a message lost loses its tells together.
 */
export class TellBatcher {
  private readonly pending = new Map<string, Pending>();
  private scheduled = false;

  constructor(
    private readonly nc: NatsConnection,
    private readonly log: Logger,
  ) {}

  /** Queues a tell of `envelope` to `subject`; it leaves when the current task ends. */
  tell(subject: string, envelope: CoreEnvelope): void {
    if (this.nc.isClosed()) {
      throw new TroupeError('UNAVAILABLE', `cannot tell ${subject}: the connection is closed`);
    }
    const text = JSON.stringify(envelope);
    const bytes = Buffer.byteLength(text, 'utf8');
    const max = this.nc.info?.max_payload;
    if (max !== undefined && bytes > max) {
      throw new TroupeError(
        'INVALID_ARGUMENT',
        `tell ${envelope.t}: the message is ${bytes} bytes, more than the server's max_payload (${max})`,
      );
    }
    let p = this.pending.get(subject);
    if (p && p.bytes + bytes > MAX_TELL_BATCH_BYTES) {
      this.flush(subject);
      p = undefined;
    }
    if (!p) {
      p = { texts: [], bytes: 0 };
      this.pending.set(subject, p);
    }
    p.texts.push(text);
    p.bytes += bytes + 1;
    if (p.texts.length >= MAX_TELLS_PER_MESSAGE) this.flush(subject);
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => this.flushAll());
    }
  }

  /** Sends the tells waiting for `subject` now (before something else is sent to it). */
  flush(subject: string): void {
    const p = this.pending.get(subject);
    if (!p) return;
    this.pending.delete(subject);
    const body =
      p.texts.length === 1 ? p.texts[0]! : `{"${TELL_BATCH_KEY}":[${p.texts.join(',')}]}`;
    try {
      this.nc.publish(subject, Buffer.from(body, 'utf8'));
    } catch (err) {
      // At most once: the connection closed after the tells were made.
      this.log.debug({ err, subject, tells: p.texts.length }, 'tells dropped');
    }
  }

  /** Sends every waiting tell. */
  flushAll(): void {
    this.scheduled = false;
    for (const subject of [...this.pending.keys()]) this.flush(subject);
  }
}
