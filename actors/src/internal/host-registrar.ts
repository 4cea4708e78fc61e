import { coordSubject, decodeErrorHeaders, type Logger, TroupeError } from '@troupe/proto';
import { type NatsConnection } from '@nats-io/transport-node';
import {
  type HostInfo,
  HeartbeatReplySchema,
  REGISTER_TIMEOUT_MS,
  RegisterReplySchema,
} from '../host-protocol';
import { decodeJson, encodeJson } from './json-codec';
import { isNatsTimeout, isNoResponders } from './nats-errors';

/** What the registrar needs from the host it registers. */
export interface RegistrarHost {
  info(): HostInfo;
  load(): Record<string, number>;
  /** The coordinator moved our actors: drop every activation and take a new incarnation. */
  fenceAll(reason: string): void;
}

/**
 * Keeps a host registered with the coordinator: registers, heartbeats every `heartbeatMs` (the
 * coordinator's contract), re-registers after a coordinator failover, and fences everything when
 * told this incarnation was declared dead. Survives a coordinator outage: activations keep
 * running and heartbeats resume when it is back.
 */
export class HostRegistrar {
  private timer?: NodeJS.Timeout;
  private registered = false;
  private heartbeatMs = 2_000;
  private stopped = false;
  private inFlight?: Promise<void>;

  constructor(
    private readonly nc: NatsConnection,
    private readonly cluster: string,
    private readonly host: RegistrarHost,
    private readonly log: Logger,
  ) {}

  /** Registers (best effort: retried on every tick until a coordinator answers) and ticks. */
  async start(): Promise<void> {
    await this.tick();
    this.schedule();
  }

  /** Fixed rate: the next beat is due `heartbeatMs` after the last one started, not ended. */
  private schedule(startedAt = performance.now()): void {
    if (this.stopped) return;
    const delayMs = Math.max(0, this.heartbeatMs - (performance.now() - startedAt));
    this.timer = setTimeout(() => {
      const start = performance.now();
      this.inFlight = this.tick().finally(() => this.schedule(start));
    }, delayMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const heartbeating = this.registered;
    try {
      if (!heartbeating) await this.register();
      else await this.heartbeat();
    } catch (err) {
      // A heartbeat nobody answered (a paused or failing-over coordinator) is followed by the
      // next one on schedule: a new leader loads our registration and answers `unknown` if it
      // lacks it. Registering instead would keep us silent for a longer register timeout,
      // which a leader that just took over may hold against us.
      if (!(heartbeating && (isNatsTimeout(err) || isNoResponders(err)))) this.registered = false;
      this.log.debug({ err }, 'coordinator unreachable; will retry');
    }
  }

  private async register(again = false): Promise<void> {
    const reply = await this.nc.request(
      coordSubject(this.cluster, 'nodes', 'register'),
      encodeJson(this.host.info()),
      { timeout: REGISTER_TIMEOUT_MS },
    );
    const error = decodeErrorHeaders(reply.headers);
    if (error) throw error;
    const contract = RegisterReplySchema.parse(decodeJson(reply.data));
    if (contract.fenced !== undefined && !again) {
      // Declared dead while we could not hear it (a partition): our actors live elsewhere now.
      this.log.warn(
        { reason: contract.fenced },
        'coordinator declared this host dead: fencing all activations',
      );
      this.host.fenceAll(contract.fenced);
      return this.register(true);
    }
    if (contract.fenced !== undefined) {
      throw new TroupeError('UNAVAILABLE', `registration refused: ${contract.fenced}`);
    }
    this.heartbeatMs = contract.heartbeatMs;
    this.registered = true;
    this.log.info({ heartbeatMs: contract.heartbeatMs }, 'registered with the coordinator');
  }

  private async heartbeat(): Promise<void> {
    const info = this.host.info();
    const reply = await this.nc.request(
      coordSubject(this.cluster, 'nodes', 'heartbeat'),
      encodeJson({ hostId: info.hostId, incarnation: info.incarnation, load: this.host.load() }),
      { timeout: Math.max(1_000, this.heartbeatMs) },
    );
    const error = decodeErrorHeaders(reply.headers);
    if (error) throw error;
    const r = HeartbeatReplySchema.parse(decodeJson(reply.data));
    if (r.status === 'fenced') {
      this.log.warn(
        { reason: r.reason },
        'coordinator declared this host dead: fencing all activations',
      );
      this.host.fenceAll(r.reason ?? 'declared dead');
      this.registered = false;
      await this.register();
    } else if (r.status === 'unknown') {
      this.registered = false;
      await this.register();
    }
  }

  /** Stops heartbeating and tells the coordinator we are leaving. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.inFlight;
    if (!this.registered) return;
    const info = this.host.info();
    try {
      await this.nc.request(
        coordSubject(this.cluster, 'nodes', 'deregister'),
        encodeJson({ hostId: info.hostId, incarnation: info.incarnation }),
        { timeout: 1_000 },
      );
    } catch (err) {
      this.log.debug({ err }, 'deregister not acknowledged');
    }
  }
}
