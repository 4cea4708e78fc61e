import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { type AnyActorDefinition } from '@troupe/actors';
import {
  type AnyJobDriver,
  Coordinator,
  type CoordinatorDeps,
  type CoordinatorOptions,
  DriverRegistry,
} from '@troupe/coordinator';
import { NodeAgent } from '@troupe/node-agent';
import {
  ensureDocker,
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';

// The real cluster of the benchmarks' integration tests, started in this process: a nats-server
// (random port, temp JetStream dir) with a connection for the test, coordinators with fast
// heartbeats, and node agents — in process, or as `troupe-node-agent` processes from
// node-agent/dist (run `npm run build` first). Each call uses a fresh random cluster name. Parts a
// test does not need are left out.

const NODE_AGENT_MAIN = path.resolve(__dirname, '../../../node-agent/dist/main.js');

type Docker = Awaited<ReturnType<typeof ensureDocker>>;

/** What a coordinator's drivers may be built from (see {@link TestClusterOptions.coordinator}). */
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
  /** Its id is `<id>-<last 6 of the cluster name>`. @default the coordinator's default id */
  id?: string;
  /** Config on top of the test defaults (fast heartbeats and sweeps, no metrics, no grace). */
  config?: Partial<CoordinatorOptions>;
  /** Other dependencies (e.g. `jobs: {watchdogMs}`). */
  deps?: Omit<CoordinatorDeps, 'drivers' | 'hosting'>;
}

/** What {@link startTestCluster} starts. */
export interface TestClusterOptions {
  /** Start nats-server (and what needs it); false starts only the Docker engine. @default true */
  nats?: boolean;
  /**
   * The coordinator (see {@link TestCoordinatorOptions}), with `ids` to start one coordinator per
   * id instead of one with the default id; false for none (a test may start one later with
   * {@link TestCluster.startCoordinator}). @default {} (no drivers, default actors)
   */
  coordinator?: false | (Omit<TestCoordinatorOptions, 'id'> & { ids?: readonly string[] });
  /**
   * An in-process node agent with these slots (default: the machine's) and shutdown grace; false
   * for none. @default false
   */
  nodeAgent?:
    false | { slots?: { sandbox?: number; evaluator?: number }; shutdownGraceMs?: number };
  /** Make sure the Docker engine runs (started as root when not). @default true */
  docker?: boolean;
}

/** A running {@link startTestCluster}. A part that was not started throws when read. */
export interface TestCluster {
  /** Random cluster name. */
  readonly cluster: string;
  readonly server: NatsServerHandle;
  /** A connection to the nats-server for the test's own use; closed by {@link stop}. */
  readonly nc: NatsConnection;
  /** The (first) coordinator. */
  readonly coordinator: Coordinator;
  /** Every coordinator, in the order of `coordinator.ids`, then those started later. */
  readonly coordinators: readonly Coordinator[];
  /** Starts one more coordinator of this cluster; stopped by {@link stop}. */
  startCoordinator(options?: TestCoordinatorOptions): Promise<Coordinator>;
  /** The in-process node agent. */
  readonly nodeAgent: NodeAgent;
  readonly docker: Docker;
  /**
   * Starts a `troupe-node-agent` process of this cluster (environment config; `env` added), its
   * stderr tail printed if it exits on its own with an error. Stopped by {@link stop}.
   */
  spawnNodeAgent(hostId: string, env?: Record<string, string>): ChildProcess;
  /** Waits until a coordinator schedules on `hostId`. */
  waitForHost(hostId: string, timeoutMs?: number): Promise<void>;
  /** Ids of this cluster's containers (running or not), with more `key=value` labels if given. */
  containers(labels?: string[]): Promise<string[]>;
  /** Stops everything it started (node agents, coordinators, connection, nats-server). */
  stop(): Promise<void>;
}

/** Starts a test cluster (see {@link TestClusterOptions}); stop it in `afterAll`. */
export async function startTestCluster(options: TestClusterOptions = {}): Promise<TestCluster> {
  const cluster = randomClusterName();
  const docker = options.docker === false ? undefined : await ensureDocker();
  const server = options.nats === false ? undefined : await startNatsServer();
  const children: ChildProcess[] = [];
  const coordinators: Coordinator[] = [];
  let nc: NatsConnection | undefined;
  let nodeAgent: NodeAgent | undefined;

  const need = <T>(part: T | undefined, name: string): T => {
    if (part === undefined) throw new Error(`this test cluster has no ${name}`);
    return part;
  };
  const self: TestCluster = {
    cluster,
    get server() {
      return need(server, 'nats-server');
    },
    get nc() {
      return need(nc, 'NATS connection');
    },
    get coordinator() {
      return need(coordinators[0], 'coordinator');
    },
    get coordinators() {
      return [...coordinators];
    },
    get nodeAgent() {
      return need(nodeAgent, 'node agent');
    },
    get docker() {
      return need(docker, 'Docker engine');
    },
    spawnNodeAgent(hostId, env = {}) {
      const child = spawn(process.execPath, [NODE_AGENT_MAIN], {
        env: {
          ...process.env,
          TROUPE_CLUSTER: cluster,
          TROUPE_NATS_URL: self.server.url,
          TROUPE_HOST_ID: hostId,
          TROUPE_LOG_LEVEL: 'warn',
          ...env,
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let err = '';
      child.stderr?.on('data', (b: Buffer) => (err = `${err}${b.toString()}`.slice(-4_000)));
      child.once('exit', (code, signal) => {
        if (code !== 0 && signal !== 'SIGKILL' && signal !== 'SIGTERM') {
          process.stderr.write(`node agent ${hostId} exited ${code ?? signal}: ${err}\n`);
        }
      });
      children.push(child);
      return child;
    },
    async startCoordinator(o = {}) {
      const parts = { cluster, server: self.server, nc: self.nc };
      const built = typeof o.drivers === 'function' ? o.drivers(parts) : (o.drivers ?? []);
      const coordinator = await Coordinator.start(
        {
          cluster,
          ...(o.id !== undefined ? { coordinatorId: `${o.id}-${cluster.slice(-6)}` } : {}),
          nats: { servers: parts.server.url },
          heartbeatMs: 250,
          missedHeartbeats: 4,
          sweepIntervalMs: 500,
          metrics: { port: null },
          shutdownGraceMs: 0,
          ...o.config,
        },
        {
          ...o.deps,
          drivers: built instanceof DriverRegistry ? built : registryOf(built),
          ...(o.hosting ? { hosting: o.hosting } : {}),
        },
      );
      coordinators.push(coordinator);
      return coordinator;
    },
    async waitForHost(hostId, timeoutMs = 30_000) {
      need(coordinators[0], 'coordinator');
      await waitFor(
        () =>
          coordinators.some((c) => c.registry?.schedulable().some((h) => h.info.hostId === hostId)),
        { timeoutMs, message: `node agent ${hostId} registered` },
      );
    },
    async containers(labels = []) {
      const list = await self.docker.listContainers({
        all: true,
        filters: { label: [`troupe.cluster=${cluster}`, ...labels] },
      });
      return list.map((c) => c.Id);
    },
    async stop() {
      for (const c of children) {
        if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
        await exited(c);
      }
      await nodeAgent?.stop().catch(() => undefined);
      for (const c of coordinators) await c.stop().catch(() => undefined);
      await nc?.close().catch(() => undefined);
      await server?.stop();
    },
  };

  try {
    if (server) nc = await connect(server.connectOptions);
    if (server && options.coordinator !== false) {
      const { ids, ...coordinator } = options.coordinator ?? {};
      for (const id of ids ?? [undefined]) {
        await self.startCoordinator({ ...coordinator, ...(id !== undefined ? { id } : {}) });
      }
    }
    if (server && options.nodeAgent) {
      nodeAgent = await NodeAgent.start({
        cluster,
        hostId: `agent-${cluster.slice(-6)}`,
        nats: { servers: server.url },
        shutdownGraceMs: options.nodeAgent.shutdownGraceMs ?? 2_000,
        ...(options.nodeAgent.slots ? { slots: options.nodeAgent.slots } : {}),
      });
      if (coordinators.length > 0) await self.waitForHost(nodeAgent.hostId, 20_000);
    }
  } catch (err) {
    await self.stop();
    throw err;
  }
  return self;
}

function registryOf(drivers: readonly AnyJobDriver[]): DriverRegistry {
  const registry = new DriverRegistry();
  for (const d of drivers) registry.register(d);
  return registry;
}

/** Resolves once `child` has exited (at once if it already has). */
export async function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise((resolve) => child.once('exit', resolve));
}

/** A Docker engine event, as much of it as the tests read. */
export interface DockerEvent {
  Action?: string;
  Actor?: { Attributes?: Record<string, string> };
}

/**
 * Follows the Docker engine's `events` (e.g. `exec_start`) of the containers of cluster
 * `tc.cluster`, calling `onEvent` with each parsed event. Returns the function that stops it.
 */
export async function followContainerEvents(
  tc: Pick<TestCluster, 'docker' | 'cluster'>,
  events: string[],
  onEvent: (e: DockerEvent) => void,
): Promise<() => void> {
  const stream = (await tc.docker.getEvents({
    filters: JSON.stringify({
      type: ['container'],
      event: events,
      label: [`troupe.cluster=${tc.cluster}`],
    }),
  })) as NodeJS.ReadableStream & { destroy?: () => void };
  let buffered = '';
  stream.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (line.trim()) onEvent(JSON.parse(line) as DockerEvent);
    }
  });
  return () => stream.destroy?.();
}
