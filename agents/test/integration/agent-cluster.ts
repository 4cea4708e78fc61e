import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ActorSystem } from '@troupe/actors';
import {
  ensureDocker,
  FakeOpenAI,
  type NatsClusterHandle,
  randomClusterName,
  startNatsCluster,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { TrajectoryStore } from '../../src/agent/trajectory-store';

// A real cluster for the agent tests, every component in its own process and built from dist/
// (run `npm run build` first): a coordinator (cluster placement, fast heartbeats), a node agent
// (Docker sandboxes) and agent hosts. The only fake is the model (FakeOpenAI, in this process).

const ROOT = path.resolve(__dirname, '..', '..', '..');
const COORDINATOR_MAIN = path.join(ROOT, 'coordinator', 'dist', 'main.js');
const NODE_AGENT_MAIN = path.join(ROOT, 'node-agent', 'dist', 'main.js');
const AGENT_HOST = path.join(__dirname, 'agent-fixtures', 'agent-host.js');

/** A child process whose output lines are collected. */
export interface Child {
  child: ChildProcess;
  lines: string[];
  waitForLine(pred: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

function spawnNode(script: string, args: string[], env: NodeJS.ProcessEnv = {}): Child {
  const child = spawn(process.execPath, [script, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const lines: string[] = [];
  const collect = (prefix: string) => {
    let buf = '';
    return (d: Buffer) => {
      buf += d.toString();
      const parts = buf.split('\n');
      buf = parts.pop() ?? '';
      lines.push(...parts.map((p) => prefix + p));
    };
  };
  child.stdout.on('data', collect(''));
  child.stderr.on('data', collect('ERR '));
  return {
    child,
    lines,
    waitForLine: (pred, timeoutMs = 30_000) =>
      waitFor(() => lines.find(pred), {
        timeoutMs,
        message: `no matching line from ${path.basename(script)}; output:\n${lines.join('\n')}`,
      }),
    async kill(signal = 'SIGKILL') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill(signal);
      await exited;
    },
  };
}

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
  hosts: Map<string, Child>;
  startHost(hostId: string): Promise<Child>;
  /** Creates a busybox sandbox on the node agent with these workspace files. */
  createSandbox(id: string, files: Record<string, string>): Promise<void>;
  /** Runs a shell command in a sandbox (through the sandbox actor). */
  sh(id: string, command: string): Promise<{ exitCode: number; stdout: string }>;
  stop(): Promise<void>;
}

/** Starts NATS, FakeOpenAI, a coordinator, optionally a node agent, and agent host `h1`. */
export async function startAgentCluster(options: {
  docker: boolean;
  /** Run on a three-server JetStream cluster, every stream with 3 replicas. @default false */
  natsCluster?: boolean;
}): Promise<AgentCluster> {
  if (options.docker) await ensureDocker();
  const nats = options.natsCluster ? await startNatsCluster({ size: 3 }) : undefined;
  const server = nats ? nats.servers[0]! : await startNatsServer();
  const urls = nats ? nats.urls : [server.url];
  const replicas = nats ? { TROUPE_REPLICAS: '3' } : {};
  const fake = await FakeOpenAI.start();
  const cluster = randomClusterName();
  const configFile = path.join(os.tmpdir(), `troupe-agent-coord-${process.pid}-${cluster}.yaml`);
  writeFileSync(configFile, 'heartbeatMs: 300\nmissedHeartbeats: 3\nsweepIntervalMs: 500\n');
  const children: Child[] = [];
  const coordinator = spawnNode(COORDINATOR_MAIN, ['--config', configFile], {
    TROUPE_CLUSTER: cluster,
    TROUPE_NATS_URL: urls.join(','),
    TROUPE_METRICS_PORT: 'off',
    ...replicas,
    TROUPE_LOG_LEVEL: 'info',
  });
  children.push(coordinator);
  await coordinator.waitForLine((l) => l.includes('leader services started'));
  if (options.docker) {
    const nodeAgent = spawnNode(NODE_AGENT_MAIN, [], {
      TROUPE_CLUSTER: cluster,
      TROUPE_NATS_URL: urls.join(','),
      TROUPE_HOST_ID: `node-${cluster}`,
      TROUPE_BACKEND: 'docker',
      TROUPE_SLOTS: 'sandbox=4,evaluator=0',
      TROUPE_LOG_LEVEL: 'info',
    });
    children.push(nodeAgent);
    await nodeAgent.waitForLine((l) => l.includes('node agent started'), 60_000);
  }
  const nc = await connect({ servers: urls });
  const client = await ActorSystem.start({ cluster, connection: nc });
  const trajectories = new TrajectoryStore({ connection: nc, cluster, replicas: nats ? 3 : 1 });
  const hosts = new Map<string, Child>();
  const startHost = async (hostId: string): Promise<Child> => {
    const host = spawnNode(
      AGENT_HOST,
      [urls.join(','), cluster, hostId, JSON.stringify(registryFor(fake))],
      replicas,
    );
    children.push(host);
    hosts.set(hostId, host);
    await host.waitForLine((l) => l === 'READY');
    return host;
  };
  const sandbox = (id: string) => client.refOf({ kind: 'sandbox', id });
  return {
    server,
    ...(nats ? { nats } : {}),
    cluster,
    fake,
    client,
    nc,
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
    async stop() {
      await client.shutdown().catch(() => undefined);
      // SIGTERM lets the node agent destroy its sandboxes; the others just stop.
      await Promise.all(children.map((c) => c.kill('SIGTERM')));
      await nc.close().catch(() => undefined);
      await fake.close();
      await (nats ?? server).stop();
      rmSync(configFile, { force: true });
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
