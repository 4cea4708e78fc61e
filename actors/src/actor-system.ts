import { randomBytes } from 'node:crypto';
import {
  type ActorAddress,
  formatAddress,
  type Logger,
  NATS_RECONNECT_OPTIONS,
  noopLogger,
  TroupeError,
  validateAddress,
  validateClusterName,
  validateHostId,
} from '@troupe/proto';
import { connect, type ConnectionOptions, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { ActorRef, UntypedActorRef } from './actor-ref';
import { type AnyActorDefinition } from './actor-definition';
import { Directory } from './directory';
import { ensureInfrastructure } from './infrastructure';
import { LocalPlacer, type PlacementServiceOptions } from './placement-service';
import { type RefFactory } from './ref-factory';
import { StateStore } from './state-store';
import { type HostInfo } from './host-protocol';
import { ActorHost } from './internal/actor-host';
import { HostRegistrar } from './internal/host-registrar';
import { Transport } from './internal/transport';

/** Credentials for the NATS connection (see docs/deploy.md for server-side permissions). */
export type NatsCredentials = { user: string; pass: string } | { token: string };

/** What a caller passes to {@link ActorSystem.start}. */
export interface ActorSystemOptions {
  /** Cluster name, `[a-z0-9-]+`. @default 'default' */
  cluster?: string;
  /** NATS server URLs; ignored when `connection` is given. @default 'nats://127.0.0.1:4222' */
  servers?: string | string[];
  /** NATS credentials. */
  credentials?: NatsCredentials;
  /** An existing connection to use (not closed by {@link ActorSystem.shutdown}). */
  connection?: NatsConnection;
  /** Injected logger. @default no logging */
  logger?: Logger;
  /** This process's host id. @default `host-<random>` */
  hostId?: string;
  /** Actor kinds this process hosts. @default [] */
  hosting?: readonly AnyActorDefinition[];
  /** Max live activations per kind on this host. @default unlimited */
  slots?: Record<string, number>;
  /**
   * `'local'`: run a {@link LocalPlacer} here that places every activation on this host (one
   * process, or `troupe dev`); `'none'`: a coordinator places.
   * @default 'local' when `hosting` is non-empty, else 'none'
   */
  placement?: 'local' | 'none';
  /**
   * Register with the coordinator and heartbeat (cluster mode).
   * @default true when `placement` is 'none' and `hosting` is non-empty
   */
  register?: boolean;
  /** What this host advertises to the coordinator. @default this machine's cores and memory */
  hostInfo?: Partial<Pick<HostInfo, 'cpu' | 'memMb' | 'backends' | 'labels'>>;
  /** Replicas of streams and buckets. @default 1 */
  replicas?: number;
  /** Sweep interval of the local placer. @default 5000 */
  sweepIntervalMs?: number;
  /**
   * Interval between the signs of life a host sends for each long ask it holds (queued or
   * running); an asker fails a long ask with UNAVAILABLE after four silent intervals (its host
   * died, stopped or was cut off). Asks of at least twelve intervals are long. Use the same value
   * on every process of a cluster. @default 5000
   */
  askKeepaliveMs?: number;
}

/**
 * One per process: the NATS connection, the refs to actors anywhere in the cluster, and — when
 * it hosts kinds — the activations living here.
 */
export class ActorSystem implements RefFactory {
  private constructor(
    readonly cluster: string,
    readonly hostId: string,
    readonly nc: NatsConnection,
    readonly jsm: JetStreamManager,
    readonly log: Logger,
    /** The connection bundle refs and placement services share. */
    readonly transport: Transport,
    private readonly host: ActorHost | undefined,
    private readonly placer: LocalPlacer | undefined,
    private readonly registrar: HostRegistrar | undefined,
    private readonly ownsConnection: boolean,
    readonly directory: Directory,
    readonly states: StateStore,
  ) {}

  /** Connects, creates the cluster's streams and buckets if needed, and starts hosting. */
  static async start(options: ActorSystemOptions = {}): Promise<ActorSystem> {
    const cluster = options.cluster ?? 'default';
    validateClusterName(cluster);
    const hostId = options.hostId ?? `host-${randomBytes(4).toString('hex')}`;
    validateHostId(hostId);
    const hosting = options.hosting ?? [];
    const kinds = new Set<string>();
    for (const d of hosting) {
      if (kinds.has(d.kind))
        throw new TroupeError('INVALID_ARGUMENT', `hosting: kind '${d.kind}' is listed twice`);
      kinds.add(d.kind);
    }
    const log = (options.logger ?? noopLogger).child({ hostId });
    const nc = options.connection ?? (await connectNats(options));
    try {
      const jsm = await jetstreamManager(nc);
      const js = jetstream(nc);
      const infra = await ensureInfrastructure(nc, jsm, cluster, {
        ...(options.replicas ? { replicas: options.replicas } : {}),
      });
      const transport = new Transport(cluster, nc, js, log, options.askKeepaliveMs);
      const directory = new Directory(infra.directory, nc);
      const states = new StateStore(infra.state, nc);
      const incarnation = randomBytes(8).toString('hex');
      const refsFor = (sender: ActorAddress): RefFactory => ({
        ref: (def, id) =>
          new ActorRef(new UntypedActorRef({ kind: def.kind, id }, transport, sender)),
        refOf: (addr) => new UntypedActorRef(addr, transport, sender),
      });
      const host =
        hosting.length > 0
          ? new ActorHost({
              transport,
              jsm,
              directory,
              states,
              hostId,
              incarnation,
              log,
              definitions: hosting,
              slots: options.slots ?? {},
              refsFor,
              ...(options.hostInfo ? { hostInfo: options.hostInfo } : {}),
            })
          : undefined;
      host?.listen();
      await host?.checkSubscriptions();
      const placement = options.placement ?? (host ? 'local' : 'none');
      let placer: LocalPlacer | undefined;
      if (placement === 'local') {
        if (!host) {
          throw new TroupeError(
            'INVALID_ARGUMENT',
            "placement: 'local' needs at least one hosted kind",
          );
        }
        placer = new LocalPlacer({
          transport,
          jsm,
          directory,
          states,
          log: log.child({ component: 'placer' }),
          localHost: host,
          ...(options.sweepIntervalMs ? { sweepIntervalMs: options.sweepIntervalMs } : {}),
        });
        await placer.start();
        const local = placer;
        transport.localPlacer = (request) => local.activate(request);
      }
      let registrar: HostRegistrar | undefined;
      if (host && (options.register ?? placement === 'none')) {
        registrar = new HostRegistrar(nc, cluster, host, log.child({ component: 'registrar' }));
        await registrar.start();
      }
      return new ActorSystem(
        cluster,
        hostId,
        nc,
        jsm,
        log,
        transport,
        host,
        placer,
        registrar,
        !options.connection,
        directory,
        states,
      );
    } catch (err) {
      if (!options.connection) await nc.close().catch(() => undefined);
      throw err;
    }
  }

  /** A typed ref to actor `id` of definition `def`. */
  ref<D extends AnyActorDefinition>(def: D, id: string): ActorRef<D> {
    return new ActorRef(new UntypedActorRef({ kind: def.kind, id }, this.transport));
  }

  /** An untyped ref by address. */
  refOf(addr: ActorAddress): UntypedActorRef {
    validateAddress(addr);
    return new UntypedActorRef(addr, this.transport);
  }

  /** Live activations on this host. */
  get activationCount(): number {
    return this.host?.activationCount ?? 0;
  }

  /** Activations this host has started since it began. */
  get activationsStarted(): number {
    return this.host?.activationsStarted ?? 0;
  }

  /**
   * The host in this process, as a placement service takes it (`localHost`): activations placed
   * here start by a direct call, and posts to actors live here are hinted without a directory
   * read. Undefined when this system hosts no kinds.
   */
  get localHost(): PlacementServiceOptions['localHost'] {
    return this.host;
  }

  /** The local placer, when placement is local. */
  get localPlacer(): LocalPlacer | undefined {
    return this.placer;
  }

  /**
   * Passivates one live activation on this host (no-op if it is not here); with `epoch`, only if
   * the activation here is of that epoch.
   */
  async deactivate(addr: ActorAddress, epoch?: number): Promise<void> {
    validateAddress(addr);
    if (!this.host) return;
    await this.host.deactivateLocal(formatAddress(addr), epoch);
  }

  /**
   * Graceful shutdown: stop taking work, let running turns finish for `graceMs`, commit and
   * release every directory entry, abort the rest, then drain the connection.
   */
  async shutdown(options: { graceMs?: number } = {}): Promise<void> {
    await this.placer?.stop();
    await this.host?.shutdown(options.graceMs ?? 10_000);
    await this.registrar?.stop();
    this.transport.keepalive.close();
    if (!this.ownsConnection) return;
    try {
      await this.nc.drain();
    } catch (err) {
      // The server is away (a drain waits for its flush and fails "connection disconnected"):
      // nothing more can be delivered, and a connection left open reconnects forever.
      this.log.warn({ err }, 'could not drain the NATS connection: closing it');
      await this.nc.close();
    }
  }
}

async function connectNats(options: ActorSystemOptions): Promise<NatsConnection> {
  const opts: ConnectionOptions = {
    servers: options.servers ?? 'nats://127.0.0.1:4222',
    name: `troupe-${options.cluster ?? 'default'}`,
    ...NATS_RECONNECT_OPTIONS,
    // nats.js otherwise allocates two Error objects per request to capture call stacks: a fifth
    // of the CPU of an activation (every KV operation is a request). Our errors name what was
    // waited on, and async stack traces still show the caller.
    noAsyncTraces: true,
  };
  if (options.credentials && 'token' in options.credentials) opts.token = options.credentials.token;
  if (options.credentials && 'user' in options.credentials) {
    opts.user = options.credentials.user;
    opts.pass = options.credentials.pass;
  }
  try {
    return await connect(opts);
  } catch (err) {
    throw new TroupeError('UNAVAILABLE', `cannot connect to NATS at ${String(opts.servers)}`, {
      cause: err,
    });
  }
}
