import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { type AnyActorDefinition, ActorSystem } from '@troupe/actors';
import { TroupeClient, type TroupeClientOptions } from '@troupe/client';
import {
  type AnyJobDriver,
  Coordinator,
  type CoordinatorDeps,
  type CoordinatorOptions,
  DriverRegistry,
} from '@troupe/coordinator';
import {
  managedLabelFilters,
  NodeAgent,
  type NodeAgentDeps,
  type NodeAgentOptions,
} from '@troupe/node-agent';
import {
  ensureDocker,
  type NatsClusterHandle,
  type NatsServerHandle,
  randomClusterName,
  startNatsCluster,
  startNatsServer,
  waitFor,
} from '@troupe/testkit';
import type Docker from 'dockerode';
import { pino } from 'pino';
import { COORDINATOR_MAIN, NODE_AGENT_MAIN } from './built-entry-points';
import { FAST_COORDINATOR_CONFIG, FAST_NODE_AGENT_CONFIG } from './fast-config';
import { spawnNodeProcess, type TestProcess } from './test-process';

/** What a coordinator's drivers may be built from (see {@link TestCoordinatorOptions.drivers}). */
export interface TestClusterParts {
  /** Random cluster name. */
  readonly cluster: string;
  readonly server: NatsServerHandle;
  /** The test's connection (see {@link TestCluster.nc}). */
  readonly nc: NatsConnection;
}

/** A coordinator of a test cluster (see {@link TestCluster.startCoordinator}). */
export interface TestCoordinatorOptions {
  /**
   * Its job drivers, or a function of the cluster's parts giving them (called for this
   * coordinator alone). @default none
   */
  drivers?:
    | readonly AnyJobDriver[]
    | ((parts: TestClusterParts) => readonly AnyJobDriver[] | DriverRegistry);
  /** The actors it hosts instead of its defaults (budget ledger, rate limits). */
  hosting?: readonly AnyActorDefinition[];
  /** Its coordinator id. @default the coordinator's default id */
  id?: string;
  /** Config on top of {@link FAST_COORDINATOR_CONFIG} (and the job API when the cluster has it). */
  config?: Partial<CoordinatorOptions>;
  /** Other dependencies (e.g. `jobs: {watchdogMs}`, `jobPolicy`). */
  deps?: Omit<CoordinatorDeps, 'drivers' | 'hosting'>;
}

/** A `troupe-coordinator` process of a test cluster (see {@link TestCluster.spawnCoordinator}). */
export interface TestCoordinatorProcessOptions {
  /** `TROUPE_COORDINATOR_ID`. @default the coordinator's default id */
  id?: string;
  /** Config-file fields on top of {@link FAST_COORDINATOR_CONFIG} (JSON-serialisable). */
  config?: Record<string, unknown>;
  /** More environment. @default TROUPE_LOG_LEVEL=info (the tests wait on log lines) */
  env?: Record<string, string>;
}

/** An in-process node agent of a test cluster (see {@link TestCluster.startNodeAgent}). */
export type TestNodeAgentOptions = Partial<NodeAgentOptions> & {
  /** Dependencies (backend, logger). @default the node agent's */
  deps?: NodeAgentDeps;
};

/** What {@link TestCluster.start} starts. */
export interface TestClusterOptions {
  /**
   * The NATS servers: `'server'` starts one nats-server (random port, temp JetStream dir);
   * `'cluster'` a three-server JetStream cluster, every coordinator stream with three replicas; a
   * handle uses that running server (shared by the tests of a file; not stopped by
   * {@link TestCluster.stop}); false none (only Docker, say). @default 'server'
   */
  nats?: 'server' | 'cluster' | NatsServerHandle | false;
  /** The cluster name (e.g. one a test fixture labels its containers with). @default random */
  cluster?: string;
  /**
   * Make sure the Docker engine runs (started as root when not); {@link TestCluster.docker}.
   * @default true when an in-process node agent is started, false otherwise
   */
  docker?: boolean;
  /**
   * In-process coordinators (see {@link TestCoordinatorOptions}), with `ids` for one per id
   * instead of one with the default id; `{process: true}` spawns one `troupe-coordinator`
   * process instead (see {@link TestCluster.spawnCoordinator}); false for none (a test may start
   * them later). @default one in-process coordinator, no drivers, default actors
   */
  coordinator?:
    | false
    | (TestCoordinatorOptions & { ids?: readonly string[]; process?: false })
    | (TestCoordinatorProcessOptions & { process: true });
  /**
   * An in-process node agent (see {@link TestCluster.startNodeAgent}); false for none.
   * @default false
   */
  nodeAgent?: false | TestNodeAgentOptions;
  /**
   * Every in-process coordinator serves the job API on `127.0.0.1:0` with a random
   * {@link TestCluster.token} (see {@link TestCluster.client}). @default false
   */
  jobApi?: boolean;
  /** Start a client-only actor system on the test's connection ({@link TestCluster.actors}). */
  actors?: boolean;
}

/**
 * A real Troupe cluster for one integration test, like Temporal's `TestWorkflowEnvironment`:
 * nats-server (one or a three-server JetStream cluster), coordinators and node agents in this
 * process or as processes built from `dist/` (kept fresh by the jest global set-up), all with
 * the fast heartbeats of {@link FAST_COORDINATOR_CONFIG}. Each cluster has its own random name,
 * so tests sharing a nats-server do not see each other. Parts a test does not ask for are not
 * started, and reading one throws. `TROUPE_TEST_LOG=debug` prints the in-process components' log
 * (pino JSON on stderr).
 */
export class TestCluster {
  /** Every coordinator started in this process, in start order (a restart keeps the slot). */
  private readonly coordinatorList: Coordinator[] = [];
  private readonly coordinatorOptions = new Map<Coordinator, TestCoordinatorOptions>();
  private readonly nodeAgentList: NodeAgent[] = [];
  private readonly processes: TestProcess[] = [];
  private readonly clients: TroupeClient[] = [];
  private readonly tempFiles: string[] = [];
  private readonly logger = testLogger();
  private connection: NatsConnection | undefined;
  private actorSystem: ActorSystem | undefined;

  private constructor(
    /** The cluster name (random unless given). */
    readonly cluster: string,
    private readonly nats: {
      server?: NatsServerHandle;
      natsCluster?: NatsClusterHandle;
      /** Stopped by {@link stop} (false for a server the caller passed in). */
      owned: boolean;
    },
    private readonly engine: Docker | undefined,
    private readonly jobApi: boolean,
    /** The job API's bearer token (random; read by coordinators with the job API). */
    readonly token: string,
  ) {}

  /** Starts a test cluster (see {@link TestClusterOptions}); stop it in `afterAll`/`finally`. */
  static async start(options: TestClusterOptions = {}): Promise<TestCluster> {
    const nodeAgent = options.nodeAgent ?? false;
    const docker = (options.docker ?? nodeAgent !== false) ? await ensureDocker() : undefined;
    const nats = options.nats ?? 'server';
    const natsCluster = nats === 'cluster' ? await startNatsCluster({ size: 3 }) : undefined;
    const server: NatsServerHandle | undefined =
      nats === 'server'
        ? await startNatsServer()
        : nats === 'cluster'
          ? natsCluster?.servers[0]
          : nats || undefined;
    const self = new TestCluster(
      options.cluster ?? randomClusterName(),
      {
        ...(server ? { server } : {}),
        ...(natsCluster ? { natsCluster } : {}),
        owned: typeof nats === 'string',
      },
      docker,
      options.jobApi ?? false,
      randomBytes(24).toString('hex'),
    );
    try {
      if (server) {
        self.connection = await connect({ ...server.connectOptions, servers: self.natsUrls });
        const coordinator = options.coordinator ?? {};
        if (coordinator !== false && coordinator.process === true) {
          const { process: _process, ...spawnOptions } = coordinator;
          const child = self.spawnCoordinator(spawnOptions);
          await child.waitForLine((l) => l.includes('leader services started'));
        } else if (coordinator !== false) {
          const { ids, process: _process, ...rest } = coordinator;
          for (const id of ids ?? [undefined]) {
            await self.startCoordinator({ ...rest, ...(id !== undefined ? { id } : {}) });
          }
        }
        if (nodeAgent !== false) await self.startNodeAgent(nodeAgent);
        // Last: the coordinators create the cluster's streams and buckets (with their replicas).
        if (options.actors) {
          self.actorSystem = await ActorSystem.start({
            cluster: self.cluster,
            connection: self.connection,
          });
        }
      }
    } catch (err) {
      await self.stop();
      throw err;
    }
    return self;
  }

  private need<T>(part: T | undefined, name: string): T {
    if (part === undefined) throw new Error(`this test cluster has no ${name}`);
    return part;
  }

  /** The nats-server (the first of {@link natsCluster} when the cluster runs on three). */
  get server(): NatsServerHandle {
    return this.need(this.nats.server, 'nats-server');
  }

  /** The three-server JetStream cluster (with `nats: 'cluster'`). */
  get natsCluster(): NatsClusterHandle {
    return this.need(this.nats.natsCluster, 'NATS cluster');
  }

  /** Every NATS client URL, for a client's `servers` option. */
  get natsUrls(): string[] {
    return this.nats.natsCluster ? this.nats.natsCluster.urls : [this.server.url];
  }

  /** A connection to NATS for the test's own use; closed by {@link stop}. */
  get nc(): NatsConnection {
    return this.need(this.connection, 'NATS connection');
  }

  /** The client-only actor system (with `actors: true`); shut down by {@link stop}. */
  get actors(): ActorSystem {
    return this.need(this.actorSystem, 'actor system (start it with actors: true)');
  }

  /** The Docker engine. */
  get docker(): Docker {
    return this.need(this.engine, 'Docker engine');
  }

  /** The (first) in-process coordinator. */
  get coordinator(): Coordinator {
    return this.need(this.coordinatorList[0], 'coordinator');
  }

  /** Every in-process coordinator, in start order. */
  get coordinators(): readonly Coordinator[] {
    return [...this.coordinatorList];
  }

  /** The (first) in-process node agent. */
  get nodeAgent(): NodeAgent {
    return this.need(this.nodeAgentList[0], 'node agent');
  }

  /** `127.0.0.1:<port>` of the (first) coordinator's job API (with `jobApi: true`). */
  get address(): string {
    const port = this.coordinator.grpcPort;
    return `127.0.0.1:${this.need(port, 'job API (start it with jobApi: true)')}`;
  }

  /** A client of the job API of {@link address}, with {@link token}; closed by {@link stop}. */
  client(options: Partial<TroupeClientOptions> = {}): TroupeClient {
    const client = new TroupeClient({
      address: this.address,
      token: this.token,
      timeoutMs: 20_000,
      ...options,
    });
    this.clients.push(client);
    return client;
  }

  /** Starts one more coordinator of this cluster in this process; stopped by {@link stop}. */
  async startCoordinator(options: TestCoordinatorOptions = {}): Promise<Coordinator> {
    const coordinator = await this.createCoordinator(options);
    this.coordinatorList.push(coordinator);
    return coordinator;
  }

  /** Stops `coordinator` now (rather than in {@link stop}). */
  async stopCoordinator(coordinator: Coordinator): Promise<void> {
    const index = this.coordinatorList.indexOf(coordinator);
    if (index < 0) throw new Error('stopCoordinator: not a coordinator of this test cluster');
    this.coordinatorList.splice(index, 1);
    await coordinator.stop();
  }

  /**
   * Stops `coordinator` (aborting running turns at once) and starts a new one with the same
   * options in its place. @default the first coordinator
   */
  async restartCoordinator(coordinator: Coordinator = this.coordinator): Promise<Coordinator> {
    const index = this.coordinatorList.indexOf(coordinator);
    const options = this.coordinatorOptions.get(coordinator);
    if (index < 0 || options === undefined) {
      throw new Error('restartCoordinator: not a coordinator of this test cluster');
    }
    await coordinator.stop();
    const next = await this.createCoordinator(options);
    this.coordinatorList[index] = next;
    return next;
  }

  private async createCoordinator(options: TestCoordinatorOptions): Promise<Coordinator> {
    const parts = { cluster: this.cluster, server: this.server, nc: this.nc };
    const built =
      typeof options.drivers === 'function' ? options.drivers(parts) : (options.drivers ?? []);
    const coordinator = await Coordinator.start(
      {
        cluster: this.cluster,
        ...(options.id !== undefined ? { coordinatorId: options.id } : {}),
        nats: { servers: this.natsUrls },
        ...FAST_COORDINATOR_CONFIG,
        metrics: { port: null },
        ...(this.nats.natsCluster ? { replicas: 3 } : {}),
        ...(this.jobApi ? { grpc: { host: '127.0.0.1', port: 0, token: this.token } } : {}),
        ...options.config,
      },
      {
        ...(this.logger ? { logger: this.logger } : {}),
        ...options.deps,
        drivers: built instanceof DriverRegistry ? built : registryOf(built),
        ...(options.hosting ? { hosting: options.hosting } : {}),
      },
    );
    this.coordinatorOptions.set(coordinator, options);
    return coordinator;
  }

  /**
   * Starts a `troupe-coordinator` process of this cluster from `coordinator/dist` (config file:
   * {@link FAST_COORDINATOR_CONFIG} and `config`; no metrics listener); killed by {@link stop}.
   * It logs at info level: wait for `coordinator started` or `leader services started`.
   */
  spawnCoordinator(options: TestCoordinatorProcessOptions = {}): TestProcess {
    const configFile = path.join(
      os.tmpdir(),
      `troupe-test-coordinator-${process.pid}-${this.cluster}-${this.tempFiles.length}.yaml`,
    );
    this.tempFiles.push(configFile);
    // JSON is YAML: the config file is the fast settings and the test's own fields.
    const config = {
      ...FAST_COORDINATOR_CONFIG,
      ...(this.nats.natsCluster ? { replicas: 3 } : {}),
      ...options.config,
    };
    writeFileSync(configFile, JSON.stringify(config));
    const child = spawnNodeProcess(COORDINATOR_MAIN, ['--config', configFile], {
      name: `coordinator ${options.id ?? this.cluster}`,
      env: {
        TROUPE_CLUSTER: this.cluster,
        TROUPE_NATS_URL: this.natsUrls.join(','),
        TROUPE_METRICS_PORT: 'off',
        TROUPE_LOG_LEVEL: 'info',
        ...(options.id !== undefined ? { TROUPE_COORDINATOR_ID: options.id } : {}),
        ...options.env,
      },
    });
    this.processes.push(child);
    return child;
  }

  /**
   * Starts a node agent of this cluster in this process (host id `agent-<last 6 of the cluster
   * name>` unless given, {@link FAST_NODE_AGENT_CONFIG}) and, when this process runs a
   * coordinator, waits until it schedules on it. Stopped by {@link stop}.
   */
  async startNodeAgent(options: TestNodeAgentOptions = {}): Promise<NodeAgent> {
    const { deps, ...config } = options;
    const agent = await NodeAgent.start(
      {
        cluster: this.cluster,
        hostId: `agent-${this.cluster.slice(-6)}`,
        nats: { servers: this.natsUrls },
        ...FAST_NODE_AGENT_CONFIG,
        ...config,
      },
      { ...(this.logger ? { logger: this.logger } : {}), ...deps },
    );
    this.nodeAgentList.push(agent);
    if (this.coordinatorList.length > 0) await this.waitForHost(agent.hostId, 20_000);
    return agent;
  }

  /**
   * Starts a `troupe-node-agent` process of this cluster from `node-agent/dist` (environment
   * config, logging at info: `node agent started` says it is up; no `vm` kind unless `env` sets
   * `TROUPE_VM`; `env` added); a crash prints
   * its output tail. SIGTERMed by {@link stop}.
   */
  spawnNodeAgent(hostId: string, env: Record<string, string> = {}): TestProcess {
    const child = spawnNodeProcess(NODE_AGENT_MAIN, [], {
      name: `node agent ${hostId}`,
      env: {
        TROUPE_CLUSTER: this.cluster,
        TROUPE_NATS_URL: this.natsUrls.join(','),
        TROUPE_HOST_ID: hostId,
        TROUPE_LOG_LEVEL: 'info',
        TROUPE_VM: 'off',
        ...env,
      },
    });
    this.processes.push(child);
    return child;
  }

  /** Waits until an in-process coordinator schedules on `hostId`. @default 30 s */
  async waitForHost(hostId: string, timeoutMs = 30_000): Promise<void> {
    this.need(this.coordinatorList[0], 'coordinator');
    await waitFor(
      () =>
        this.coordinatorList.some((c) =>
          c.registry?.schedulable().some((h) => h.info.hostId === hostId),
        ),
      { timeoutMs, message: `node agent ${hostId} registered` },
    );
  }

  /** Ids of this cluster's containers (running or not), with more `key=value` labels if given. */
  async containers(labels: readonly string[] = []): Promise<string[]> {
    const list = await this.docker.listContainers({
      all: true,
      filters: { label: [`troupe.cluster=${this.cluster}`, ...labels] },
    });
    return list.map((c) => c.Id);
  }

  /**
   * Stops everything it started: job API clients, processes (SIGTERM, so a node agent removes
   * its sandboxes), node agents, coordinators, the actor system, the connection and the NATS
   * servers it started; then removes containers and volumes still labelled with this cluster (a
   * safety net after a failed test). Safe to call twice.
   */
  async stop(): Promise<void> {
    for (const c of this.clients.splice(0)) c.close();
    await Promise.all(this.processes.splice(0).map((p) => p.kill('SIGTERM')));
    for (const a of this.nodeAgentList.splice(0)) await a.stop().catch(() => undefined);
    for (const c of this.coordinatorList.splice(0)) await c.stop().catch(() => undefined);
    await this.actorSystem?.shutdown().catch(() => undefined);
    await this.connection?.close().catch(() => undefined);
    if (this.nats.owned) await (this.nats.natsCluster ?? this.nats.server)?.stop();
    await Promise.all(this.tempFiles.splice(0).map((f) => rm(f, { force: true })));
    if (this.engine) await removeClusterLeftovers(this.engine, this.cluster);
  }
}

function registryOf(drivers: readonly AnyJobDriver[]): DriverRegistry {
  const registry = new DriverRegistry();
  for (const d of drivers) registry.register(d);
  return registry;
}

function testLogger(): pino.Logger | undefined {
  const level = process.env['TROUPE_TEST_LOG'];
  return level ? pino({ level }, pino.destination(2)) : undefined;
}

async function removeClusterLeftovers(docker: Docker, cluster: string): Promise<void> {
  const filters = { label: managedLabelFilters(cluster) };
  const containers = await docker.listContainers({ all: true, filters });
  await Promise.all(
    containers.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch(() => undefined),
    ),
  );
  const volumes = (await docker.listVolumes({ filters })).Volumes ?? [];
  await Promise.all(
    volumes.map((v) =>
      docker
        .getVolume(v.Name)
        .remove()
        .catch(() => undefined),
    ),
  );
}
