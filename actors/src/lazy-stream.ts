import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { type NatsConnection } from '@nats-io/transport-node';
import { ensureStream, type StreamSpec } from './ensure-stream';
import { type Logger } from '@troupe/proto';

/** Options of {@link LazyStream}. */
export interface LazyStreamOptions {
  /** An open NATS connection (not closed by the stream). */
  connection: NatsConnection;
  /** The stream to make sure of (see {@link ensureStream}). */
  spec: StreamSpec;
  /** Receives the warning about an existing stream with other settings. @default none */
  logger?: Logger;
}

/**
 * A stream that is made sure of on first use, for stores that call {@link LazyStream.ensure}
 * before every operation: the first call runs {@link ensureStream}, concurrent callers share
 * that one attempt, later calls return at once, and a failed attempt is forgotten so the next
 * call tries again.
 */
export class LazyStream {
  private ready: Promise<JetStreamManager> | undefined;

  constructor(private readonly options: LazyStreamOptions) {}

  /** The stream's name. */
  get name(): string {
    return this.options.spec.name;
  }

  /** Makes sure the stream exists (once) and returns a JetStream manager for it. */
  ensure(): Promise<JetStreamManager> {
    this.ready ??= this.create().catch((err: unknown) => {
      this.ready = undefined;
      throw err;
    });
    return this.ready;
  }

  private async create(): Promise<JetStreamManager> {
    const jsm = await jetstreamManager(this.options.connection);
    await ensureStream(
      jsm,
      this.options.spec,
      this.options.logger ? { logger: this.options.logger } : {},
    );
    return jsm;
  }
}
