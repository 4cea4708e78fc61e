import path from 'node:path';
import { type NatsConnection } from '@nats-io/transport-node';
import { type ActorSystem } from '@troupe/actors';
import type Docker from 'dockerode';
import { spawnNodeProcess, TestCluster, type TestProcess } from '@troupe/test-cluster';
import { FakeOpenAI, type NatsClusterHandle, type NatsServerHandle } from '@troupe/testkit';
import { TrajectoryStore } from '../../src/agent/trajectory-store';

// The agent tests' fixtures on a test cluster whose coordinator and node agent (Docker sandboxes)
// run as processes built from dist/: FakeOpenAI (in this process; the only fake), the model
// registry pointing at it, agent host processes and a trajectory store.

const AGENT_HOST = path.join(__dirname, 'agent-fixtures', 'agent-host.js');

/** The model registry every agent host uses: two models on the FakeOpenAI server. */
export function registryFor(fake: FakeOpenAI) {
  return {
    models: {
      // $0.001 per output token, for the budget test.
      priced: {
        baseURL: fake.baseURL,
        model: 'fake-model',
        inputUsdPer1M: 0,
        outputUsdPer1M: 1_000,
        maxTokens: 256,
      },
      fake: {
        baseURL: fake.baseURL,
        model: 'fake-model',
        inputUsdPer1M: 0,
        outputUsdPer1M: 0,
        maxTokens: 256,
      },
      summariser: {
        baseURL: fake.baseURL,
        model: 'fake-model',
        inputUsdPer1M: 0,
        outputUsdPer1M: 0,
      },
    },
  };
}

/** A running test cluster. */
export interface AgentCluster {
  /** The NATS server (the first of {@link nats} when the cluster runs on three). */
  server: NatsServerHandle;
  /** The three-server JetStream cluster, when started with `natsCluster` (replicas 3). */
  nats?: NatsClusterHandle;
  cluster: string;
  fake: FakeOpenAI;
  /** A client-only actor system (hosts nothing). */
  client: ActorSystem;
  nc: NatsConnection;
  trajectories: TrajectoryStore;
  hosts: Map<string, TestProcess>;
  startHost(hostId: string): Promise<TestProcess>;
  /** Creates a busybox sandbox on the node agent with these workspace files. */
  createSandbox(id: string, files: Record<string, string>): Promise<void>;
  /** Runs a shell command in a sandbox (through the sandbox actor). */
  sh(id: string, command: string): Promise<{ exitCode: number; stdout: string }>;
  /** This cluster's Docker containers (running or not) with these `key=value` labels. */
  containers(labels: readonly string[]): Promise<Docker.ContainerInfo[]>;
  /** The Docker engine's view of a container. */
  inspect(containerId: string): Promise<Docker.ContainerInspectInfo>;
  stop(): Promise<void>;
}

/** Starts NATS, FakeOpenAI, a coordinator process, optionally a node agent process. */
export async function startAgentCluster(options: {
  docker: boolean;
  /** Run on a three-server JetStream cluster, every stream with 3 replicas. @default false */
  natsCluster?: boolean;
}): Promise<AgentCluster> {
  const tc = await TestCluster.start({
    nats: options.natsCluster ? 'cluster' : 'server',
    coordinator: { process: true },
    docker: options.docker,
    actors: true,
  });
  const urls = tc.natsUrls.join(',');
  const replicas = options.natsCluster ? { TROUPE_REPLICAS: '3' } : {};
  if (options.docker) {
    await tc
      .spawnNodeAgent(`node-${tc.cluster}`, {
        TROUPE_BACKEND: 'docker',
        TROUPE_SLOTS: 'sandbox=4,evaluator=0',
      })
      .waitForLine((l) => l.includes('node agent started'), 60_000);
  }
  const fake = await FakeOpenAI.start();
  const trajectories = new TrajectoryStore({
    connection: tc.nc,
    cluster: tc.cluster,
    replicas: options.natsCluster ? 3 : 1,
  });
  const hosts = new Map<string, TestProcess>();
  const startHost = async (hostId: string): Promise<TestProcess> => {
    const host = spawnNodeProcess(
      AGENT_HOST,
      [urls, tc.cluster, hostId, JSON.stringify(registryFor(fake))],
      { env: replicas },
    );
    hosts.set(hostId, host);
    await host.waitForLine((l) => l === 'READY');
    return host;
  };
  const sandbox = (id: string) => tc.actors.refOf({ kind: 'sandbox', id });
  return {
    server: tc.server,
    ...(options.natsCluster ? { nats: tc.natsCluster } : {}),
    cluster: tc.cluster,
    fake,
    client: tc.actors,
    nc: tc.nc,
    trajectories,
    hosts,
    startHost,
    async createSandbox(id, files) {
      await sandbox(id).ask(
        'create',
        { spec: { image: 'troupe-busybox', files } },
        { timeoutMs: 120_000 },
      );
    },
    async sh(id, command) {
      const r = (await sandbox(id).ask('exec', { cmd: command }, { timeoutMs: 60_000 })) as {
        exitCode: number;
        stdout: string;
      };
      return r;
    },
    async containers(labels) {
      return tc.docker.listContainers({
        all: true,
        filters: { label: [`troupe.cluster=${tc.cluster}`, ...labels] },
      });
    },
    async inspect(containerId) {
      return tc.docker.getContainer(containerId).inspect();
    },
    async stop() {
      await tc.actors.shutdown().catch(() => undefined);
      await Promise.all([...hosts.values()].map((h) => h.kill('SIGTERM')));
      // SIGTERM lets the node agent destroy its sandboxes; the others just stop.
      await tc.stop();
      await fake.close();
    },
  };
}

/** The tool messages of a recorded chat request, by tool call id. */
export function toolResults(body: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  const messages = (
    body as { messages: { role: string; tool_call_id?: string; content?: unknown }[] }
  ).messages;
  for (const m of messages) {
    if (m.role === 'tool' && m.tool_call_id) out[m.tool_call_id] = String(m.content);
  }
  return out;
}
