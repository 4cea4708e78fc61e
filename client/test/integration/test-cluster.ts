import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { registerBuiltinDrivers } from '@troupe/benchmarks';
import { TroupeClient, type TroupeClientOptions } from '@troupe/client';
import { Coordinator, type CoordinatorOptions, DriverRegistry } from '@troupe/coordinator';
import { NodeAgent } from '@troupe/node-agent';
import {
  ensureDocker,
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';

/** A real cluster in this process: nats-server, a coordinator serving the job API, a node agent. */
export interface TestCluster {
  cluster: string;
  token: string;
  coordinator: Coordinator;
  agent: NodeAgent;
  /** `127.0.0.1:<port>` of the job API. */
  readonly address: string;
  /** A client of the job API (with the token unless overridden). */
  client(options?: Partial<TroupeClientOptions>): TroupeClient;
  /** Stops the coordinator (aborting running turns at once) and starts a new one. */
  restartCoordinator(): Promise<void>;
  /** Running containers of a job (by the node agent's `troupe.job` label). */
  jobContainers(jobId: string): Promise<string[]>;
  stop(): Promise<void>;
}

/** Starts nats-server (shared per test file), a coordinator and a node agent. */
export async function startTestCluster(
  server: NatsServerHandle,
  options: { sandboxSlots?: number; grpc?: Partial<NonNullable<CoordinatorOptions['grpc']>> } = {},
): Promise<TestCluster> {
  const docker = await ensureDocker();
  const cluster = randomClusterName();
  const token = randomBytes(24).toString('hex');
  const clients: TroupeClient[] = [];
  const config: CoordinatorOptions = {
    cluster,
    nats: { servers: server.url },
    heartbeatMs: 250,
    missedHeartbeats: 4,
    sweepIntervalMs: 500,
    leaseMs: 2_000,
    renewMs: 500,
    metrics: { port: null },
    shutdownGraceMs: 0,
    grpc: { host: '127.0.0.1', port: 0, token, ...options.grpc },
  };
  // TROUPE_TEST_LOG=debug shows the coordinator's log (pino JSON on stderr) when debugging.
  const level = process.env['TROUPE_TEST_LOG'];
  const logger = level ? pino({ level }, pino.destination(2)) : undefined;
  const startCoordinator = () =>
    Coordinator.start(config, {
      ...(logger ? { logger } : {}),
      drivers: registerBuiltinDrivers(new DriverRegistry()),
      jobs: { cancelGraceMs: 20_000, watchdogMs: 1_000 },
    });
  let coordinator = await startCoordinator();
  const agent = await NodeAgent.start({
    cluster,
    hostId: `agent-${cluster.slice(-6)}`,
    nats: { servers: server.url },
    shutdownGraceMs: 2_000,
    ...(options.sandboxSlots ? { slots: { sandbox: options.sandboxSlots } } : {}),
  });
  await waitFor(
    () => coordinator.registry?.schedulable().some((h) => h.info.hostId === agent.hostId),
    {
      timeoutMs: 20_000,
      message: 'node agent registered',
    },
  );
  const self: TestCluster = {
    cluster,
    token,
    get coordinator() {
      return coordinator;
    },
    agent,
    get address() {
      return `127.0.0.1:${coordinator.grpcPort}`;
    },
    client(over = {}) {
      const c = new TroupeClient({ address: self.address, token, timeoutMs: 20_000, ...over });
      clients.push(c);
      return c;
    },
    async restartCoordinator() {
      await coordinator.stop();
      coordinator = await startCoordinator();
    },
    async jobContainers(jobId) {
      const list = await docker.listContainers({
        all: true,
        filters: { label: [`troupe.cluster=${cluster}`, `troupe.job=${jobId}`] },
      });
      return list.map((c) => c.Id);
    },
    async stop() {
      for (const c of clients) c.close();
      await agent.stop().catch(() => undefined);
      await coordinator.stop().catch(() => undefined);
      const left = await docker.listContainers({
        all: true,
        filters: { label: [`troupe.cluster=${cluster}`] },
      });
      await Promise.all(
        left.map((c) =>
          docker
            .getContainer(c.Id)
            .remove({ force: true, v: true })
            .catch(() => undefined),
        ),
      );
    },
  };
  return self;
}

/** Starts the nats-server shared by the tests of one file. */
export async function startServer(): Promise<NatsServerHandle> {
  return startNatsServer();
}
