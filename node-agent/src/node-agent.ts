import { ActorSystem, isLiveState } from '@troupe/actors';
import {
  type ActorAddress,
  cancelledError,
  ErrorCode,
  hostSubject,
  type Logger,
  natsConnectionOptions,
  noopLogger,
  parseAddress,
  parseWith,
  TroupeError,
} from '@troupe/proto';
import { connect, type ConnectionOptions, type NatsConnection } from '@nats-io/transport-node';
import Docker from 'dockerode';
import { z } from 'zod';
import { ArtifactStore } from './artifact-store';
import { ConfigSchema, type NodeAgentConfig, type NodeAgentOptions } from './config';
import { DesktopEnvironmentBackend } from './desktop-environment-backend';
import { DockerSandboxBackend } from './docker-sandbox-backend';
import type { EnvironmentBackend } from './environment';
import { createEnvironmentActor } from './environment-actor';
import { ENVIRONMENT_KIND } from './environment-actor-messages';
import { EVALUATOR_KIND } from './evaluator-actor-messages';
import { createEvaluatorActor } from './evaluator-actor';
import {
  defaultSlots,
  detectBackends,
  type HostBackend,
  type KindSlots,
  machineResources,
} from './host-capacity';
import { ImageManager } from './image-manager';
import { type ImagePreparer, ImageResolver } from './image-resolver';
import { ProcessSandboxBackend } from './process-sandbox-backend';
import { type ReapResult, Reaper } from './reaper';
import {
  type OrphanCommandEnd,
  orphanCommandReader,
  postOrphanCommandEnds,
} from './internal/orphan-commands';
import { SANDBOX_KIND } from './sandbox-actor-messages';
import { createSandboxActor } from './sandbox-actor';
import type { SandboxBackend } from './sandbox-backend';
import { startVmHost, type VmHost } from './vm-host';
import { WarmPool } from './warm-pool';

/** What {@link NodeAgent.start} takes besides the config. */
export interface NodeAgentDeps {
  /** Logger (the app passes a pino root logger). @default a logger that drops everything */
  logger?: Logger;
  /** Use this NATS connection instead of connecting (not closed by {@link NodeAgent.stop}). */
  connection?: NatsConnection;
  /** Use this Docker client instead of one on `config.docker.socketPath`. */
  docker?: Docker;
  /**
   * Receives the progress lines (`[images] <name>: ...`) of the images this node agent builds on
   * first use, which can take minutes on a fresh machine (the embedded cluster shows them).
   */
  onImageBuildProgress?: (line: string) => void;
}

const PingReplySchema = z.object({ incarnation: z.string() });

/**
 * The node agent: hosts `sandbox` and `evaluator` actors on this machine. `start` picks the
 * sandbox backend, removes whatever an earlier process with this host id left behind, opens the
 * artifact store, fills the warm pools, then starts an {@link ActorSystem} that registers with the
 * coordinator (kinds, slots, backends, labels) and the periodic {@link Reaper}. `stop` drains:
 * no new work, running calls get `shutdownGraceMs`, every sandbox is destroyed, the host
 * deregisters.
 */
export class NodeAgent {
  private stopping: Promise<void> | undefined;

  private constructor(
    /** Validated configuration. */
    readonly config: NodeAgentConfig,
    /** The actor system (refs, directory). */
    readonly system: ActorSystem,
    /** The cluster's artifact store. */
    readonly artifacts: ArtifactStore,
    /** Backend the sandbox and evaluator actors use. */
    readonly backend: SandboxBackend,
    /** Backends advertised to the coordinator. */
    readonly backends: readonly HostBackend[],
    /** Slots advertised per kind. */
    readonly slots: KindSlots,
    /** Warm pools. */
    readonly pools: readonly WarmPool[],
    /** Backends the environment actors use (none without Docker). */
    readonly environmentBackends: readonly EnvironmentBackend[],
    private readonly reaper: Reaper | undefined,
    /** The `vm` kind's backend, reaper and accelerator, when this host offers it. */
    readonly vm: VmHost | undefined,
    private readonly docker: Docker | undefined,
    private readonly nc: NatsConnection,
    private readonly ownsConnection: boolean,
    private readonly lifetime: AbortController,
    private readonly log: Logger,
  ) {}

  /** This host's id. */
  get hostId(): string {
    return this.config.hostId;
  }

  /**
   * Validates the config, prepares the backend and starts hosting.
   * @throws TroupeError `INVALID_ARGUMENT` naming every bad field, `UNAVAILABLE` when neither
   *   Docker nor an allowed process backend is available or NATS cannot be reached
   */
  static async start(options: NodeAgentOptions, deps: NodeAgentDeps = {}): Promise<NodeAgent> {
    const config = parseWith(ConfigSchema, options, { prefix: 'config' });
    const { cluster, hostId } = config;
    const log = (deps.logger ?? noopLogger).child({ component: 'node-agent', hostId });
    const lifetime = new AbortController();

    // 1. The backend.
    const docker =
      config.backend === 'process'
        ? undefined
        : (deps.docker ?? new Docker({ socketPath: config.docker.socketPath }));
    const backends = await detectBackends({
      ...(docker ? { docker } : {}),
      pingTimeoutMs: config.docker.pingTimeoutMs,
      allowProcessBackend: config.allowProcessBackend,
    });
    const useDocker = config.backend !== 'process' && backends.includes('docker');
    if (!useDocker && (config.backend === 'docker' || !config.allowProcessBackend)) {
      throw new TroupeError(
        ErrorCode.UNAVAILABLE,
        `no Docker engine answers at ${config.docker.socketPath}: start dockerd (or set ` +
          'docker.socketPath / TROUPE_DOCKER_SOCKET), or allow the unsafe process backend for ' +
          'development (allowProcessBackend / TROUPE_ALLOW_PROCESS_BACKEND=1)',
      );
    }
    const backend: SandboxBackend =
      useDocker && docker
        ? new DockerSandboxBackend({
            docker,
            logger: log,
            defaultExecTimeoutMs: config.sandbox.defaultExecTimeoutMs,
            maxOutputBytes: config.sandbox.maxOutputBytes,
          })
        : new ProcessSandboxBackend({
            allowUnsafeProcessBackend: true,
            logger: log,
            defaultExecTimeoutMs: config.sandbox.defaultExecTimeoutMs,
            maxOutputBytes: config.sandbox.maxOutputBytes,
            ...(config.processBackend.rootDir ? { rootDir: config.processBackend.rootDir } : {}),
          });
    if (backend.kind === 'process') {
      log.warn({}, 'using the UNSAFE process sandbox backend: nothing is isolated');
    }
    const dockerClient = useDocker ? docker : undefined;

    // 2. NATS (and, below, the artifact store).
    const nc = deps.connection ?? (await connectNats(config));
    let system: ActorSystem | undefined;
    const pools: WarmPool[] = [];
    // The table of environment backends: one per environment kind this host can run.
    const environmentBackends: EnvironmentBackend[] = dockerClient
      ? [
          new DesktopEnvironmentBackend({
            docker: dockerClient,
            readyTimeoutMs: config.environment.readyTimeoutMs,
            logger: log,
          }),
        ]
      : [];
    const resources = machineResources();
    let vm: VmHost | undefined;
    // Ends of commands that ran in containers of an earlier process, posted once hosting.
    const orphanEnds: OrphanCommandEnd[] = [];
    try {
      // 3. A starting node agent owns nothing yet: every object with this cluster's and host's
      // labels was left by an earlier process with this host id (a crash, a kill -9). How their
      // commands ended is read from Docker first: nothing else knows it.
      if (dockerClient) {
        const swept = await new Reaper({
          docker: dockerClient,
          cluster,
          host: hostId,
          minAgeMs: 0,
          isOwned: () => false,
          beforeRemove: orphanCommandReader(
            nc,
            cluster,
            dockerClient,
            (e) => orphanEnds.push(e),
            log,
          ),
          logger: log,
        }).sweep({ signal: lifetime.signal });
        logSweep(log, swept, 'start-up sweep');
      }
      vm = await startVmHost(config.vm, {
        cluster,
        hostId,
        resources,
        reaper: config.reaper,
        log,
        signal: lifetime.signal,
      });
      if (vm) {
        environmentBackends.push(vm.backend);
        backends.push('vm');
      }
      const artifacts = await ArtifactStore.open(nc, {
        cluster,
        replicas: config.replicas,
        logger: log,
      });

      // 4. Images and warm pools.
      const images: ImagePreparer | undefined = dockerClient
        ? new ImageResolver({
            docker: dockerClient,
            images: new ImageManager({
              docker: dockerClient,
              allowBuild: config.images.allowBuild,
              logger: log,
              ...(config.images.buildScript ? { buildScript: config.images.buildScript } : {}),
            }),
            signal: lifetime.signal,
            logger: log,
            ...(deps.onImageBuildProgress ? { onBuildProgress: deps.onImageBuildProgress } : {}),
          })
        : undefined;
      for (const entry of config.warmPools) {
        const { size, ...spec } = entry;
        await images?.prepare(spec.image, { signal: lifetime.signal });
        const pool = new WarmPool({
          backend,
          size,
          spec: { ...spec, labels: { cluster, host: hostId, actor: 'pool', job: '' } },
          logger: log,
        });
        pool.start();
        pools.push(pool);
      }

      // 5. The actors. Hooks reach the system, which is created after the definitions.
      const late: { system?: ActorSystem } = {};
      const passivate = async (addr: ActorAddress, epoch: number): Promise<void> => {
        const s = late.system;
        if (!s) return;
        // Only the activation that asked: a newer one of the same actor may live here by now,
        // or start while the directory is read (an entry read before a re-placement names the
        // old epoch), so the epoch is checked again where the activation lives.
        const { entry } = await s.directory.get(addr);
        if (entry.epoch === epoch && entry.hostId === hostId) await s.deactivate(addr, epoch);
      };
      const sandboxDef = createSandboxActor({
        backend,
        artifacts,
        cluster,
        hostId,
        pools,
        passivate,
        idleTimeoutMs: config.sandbox.idleTimeoutMs,
        maxReplyBytes: maxReplyBytes(nc),
        logger: log,
        ...(images ? { images } : {}),
      });
      const evaluatorDef = createEvaluatorActor({
        backend,
        artifacts,
        cluster,
        hostId,
        passivate,
        maxStoredGrades: config.evaluator.maxStoredGrades,
        evaluator: {
          defaultTimeoutMs: config.evaluator.defaultTimeoutMs,
          memoryMb: config.evaluator.memoryMb,
          cpus: config.evaluator.cpus,
          pidsLimit: config.evaluator.pidsLimit,
          maxLogBytes: config.evaluator.maxLogBytes,
        },
        logger: log,
        ...(images ? { images } : {}),
      });
      const environmentDef = createEnvironmentActor({
        backends: environmentBackends,
        cluster,
        hostId,
        passivate,
        idleTimeoutMs: config.environment.idleTimeoutMs,
        logger: log,
        ...(images ? { images } : {}),
      });
      const defaults = defaultSlots(resources);
      const slots: KindSlots = {
        sandbox: config.slots.sandbox ?? defaults.sandbox,
        evaluator: config.slots.evaluator ?? defaults.evaluator,
        environment:
          environmentBackends.length === 0 ? 0 : (config.slots.environment ?? defaults.environment),
      };
      system = await ActorSystem.start({
        cluster,
        connection: nc,
        hostId,
        logger: deps.logger ?? noopLogger,
        hosting: [sandboxDef, evaluatorDef, ...(slots.environment > 0 ? [environmentDef] : [])],
        slots: {
          [SANDBOX_KIND]: slots.sandbox,
          [EVALUATOR_KIND]: slots.evaluator,
          ...(slots.environment > 0 ? { [ENVIRONMENT_KIND]: slots.environment } : {}),
        },
        placement: config.standalone ? 'local' : 'none',
        register: !config.standalone,
        hostInfo: { ...resources, backends, labels: { ...config.labels, ...vm?.labels } },
        replicas: config.replicas,
      });
      late.system = system;
      await postOrphanCommandEnds(system, orphanEnds, log);

      // 6. Periodic sweeps: an object is owned while the directory says its actor lives on this
      // host incarnation.
      const reaper = dockerClient
        ? new Reaper({
            docker: dockerClient,
            cluster,
            host: hostId,
            intervalMs: config.reaper.intervalMs,
            minAgeMs: config.reaper.minAgeMs,
            isOwned: ownership(system, nc, [SANDBOX_KIND, EVALUATOR_KIND, ENVIRONMENT_KIND]),
            livePoolIds: () => pools.map((p) => p.id),
            logger: log,
          })
        : undefined;
      if (reaper) logSweep(log, await reaper.start({ signal: lifetime.signal }), 'sweep');

      log.info(
        {
          cluster,
          backend: backend.kind,
          backends,
          slots,
          pools: pools.length,
          ...(vm ? { vmAccel: vm.accel.accel, vmsReaped: vm.swept.vms.length } : {}),
        },
        'node agent started',
      );
      return new NodeAgent(
        config,
        system,
        artifacts,
        backend,
        backends,
        slots,
        pools,
        environmentBackends,
        reaper,
        vm,
        dockerClient,
        nc,
        !deps.connection,
        lifetime,
        log,
      );
    } catch (err) {
      lifetime.abort(cancelledError('shutdown'));
      await vm?.reaper.stop();
      await system?.shutdown({ graceMs: 0 }).catch(() => undefined);
      await Promise.allSettled(pools.map((p) => p.close()));
      await Promise.allSettled(environmentBackends.map((b) => b.close()));
      await backend.close().catch(() => undefined);
      if (!deps.connection) await nc.close().catch(() => undefined);
      throw err;
    }
  }

  /**
   * Graceful stop: stop taking work, let running calls finish for `graceMs`, destroy every
   * sandbox (passivation does), deregister, sweep whatever is left. Idempotent.
   */
  async stop(options: { graceMs?: number } = {}): Promise<void> {
    this.stopping ??= this.doStop(options.graceMs ?? this.config.shutdownGraceMs);
    return this.stopping;
  }

  private async doStop(graceMs: number): Promise<void> {
    this.log.info({ graceMs }, 'node agent stopping');
    this.lifetime.abort(cancelledError('shutdown'));
    await this.reaper?.stop();
    await this.vm?.reaper.stop();
    await this.system.shutdown({ graceMs });
    await Promise.allSettled(this.pools.map((p) => p.close()));
    await Promise.allSettled(this.environmentBackends.map((b) => b.close()));
    await this.backend.close().catch((err: unknown) => {
      this.log.warn({ err }, 'some sandboxes could not be destroyed');
    });
    if (this.docker) {
      // Nothing of this host survives it (a sandbox whose destroy failed, a fenced activation's).
      const swept = await new Reaper({
        docker: this.docker,
        cluster: this.config.cluster,
        host: this.hostId,
        minAgeMs: 0,
        isOwned: () => false,
        logger: this.log,
      })
        .sweep()
        .catch((err: unknown) => {
          this.log.warn({ err }, 'final sweep failed');
          return undefined;
        });
      if (swept) logSweep(this.log, swept, 'final sweep');
    }
    if (this.ownsConnection) await this.nc.drain().catch(() => undefined);
    this.log.info({}, 'node agent stopped');
  }
}

/**
 * The reaper's owner check: an object labelled `troupe.actor=<kind>/<id>` is owned while that
 * actor is live (ACTIVATING, IDLE or RUNNING) on this host *incarnation* — so after a restart
 * with the same host id, or after the coordinator fenced this process, what the old incarnation
 * left is not.
 */
function ownership(
  system: ActorSystem,
  nc: NatsConnection,
  kinds: readonly string[],
): (actor: string) => Promise<boolean> {
  let cached: { incarnation: string; atMs: number } | undefined;
  const incarnation = async (): Promise<string> => {
    if (cached && Date.now() - cached.atMs < 1_000) return cached.incarnation;
    // The system keeps its incarnation to itself; its host answers pings with it.
    const reply = await nc.request(hostSubject(system.cluster, system.hostId, 'ping'), '{}', {
      timeout: 2_000,
    });
    const { incarnation: current } = PingReplySchema.parse(reply.json());
    cached = { incarnation: current, atMs: Date.now() };
    return current;
  };
  return async (actor) => {
    let addr: ActorAddress;
    try {
      addr = parseAddress(actor);
    } catch {
      return false;
    }
    if (!kinds.includes(addr.kind)) return false;
    const { entry } = await system.directory.get(addr);
    if (!isLiveState(entry.state) || entry.hostId !== system.hostId) return false;
    return entry.incarnation === undefined || entry.incarnation === (await incarnation());
  };
}

function logSweep(log: Logger, result: ReapResult, what: string): void {
  if (result.containers.length + result.volumes.length + result.failures === 0) return;
  log.info(
    {
      sweep: what,
      containers: result.containers.length,
      volumes: result.volumes.length,
      failures: result.failures,
    },
    'sweep removed orphans',
  );
}

/** Replies must fit one NATS message; leave room for headers. */
function maxReplyBytes(nc: NatsConnection): number {
  const maxPayload = nc.info?.max_payload ?? 1024 * 1024;
  return Math.max(64 * 1024, Math.floor(maxPayload * 0.75));
}

async function connectNats(config: NodeAgentConfig): Promise<NatsConnection> {
  const opts: ConnectionOptions = {
    ...natsConnectionOptions(config.nats),
    name: `troupe-node-agent-${config.hostId}`,
  };
  try {
    return await connect(opts);
  } catch (err) {
    throw new TroupeError(
      ErrorCode.UNAVAILABLE,
      `cannot connect to NATS at ${String(config.nats.servers)}`,
      { cause: err },
    );
  }
}
