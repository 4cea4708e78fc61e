import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  ensureDocker,
  getFreePort,
  type NatsServerHandle,
  randomClusterName,
  startNatsServer,
  waitFor,
} from '@troupe/testkit';
import { repoRoot } from '../repo-root';
import type { SoakedProcess } from './process-sampler';

/** Options of {@link startSoakCluster}. */
export interface SoakClusterOptions {
  /** Sandbox backend of the node agent: real Docker containers, or plain processes. */
  backend: 'docker' | 'process';
  /** Sandbox slots of the node agent. */
  slots: number;
  /** How long the coordinator keeps finished jobs (`TROUPE_JOB_RETENTION_MS`); `null` keeps them. */
  jobRetentionMs: number | null;
  /** Folder for the processes' logs and probe reports. */
  dir: string;
  /** How often the Node processes' probes report, ms. */
  probeMs: number;
}

/** A running soak cluster: nats-server, a coordinator process and a node agent process. */
export interface SoakCluster {
  cluster: string;
  /** The job API address (`127.0.0.1:<port>`) and its bearer token. */
  address: string;
  token: string;
  /** Every process to sample. */
  processes: SoakedProcess[];
  /** Names of processes that exited while the cluster ran (with how). */
  exited(): string[];
  stop(): Promise<void>;
}

/** A Node server process started from the built CLI, with its log in `dir`. */
interface ServerProcess {
  child: ChildProcess;
  exit?: string;
}

/**
 * Starts a real cluster as separate processes: nats-server (testkit), `troupe coordinator` and
 * `troupe node-agent` from `client/dist` (the deployable entries, with the built-in drivers),
 * each preloaded with the soak probe (`fuzz/dist/soak/process-probe.js`). Waits for both ready
 * files. Logs go to `<dir>/<name>.log`.
 */
export async function startSoakCluster(options: SoakClusterOptions): Promise<SoakCluster> {
  const root = repoRoot();
  const cli = path.join(root, 'client', 'dist', 'cli', 'main.js');
  const probe = path.join(root, 'fuzz', 'dist', 'soak', 'process-probe.js');
  for (const f of [cli, probe]) {
    if (!existsSync(f)) throw new Error(`${f} is missing: run npm run build first`);
  }
  if (options.backend === 'docker') await ensureDocker();
  const cluster = randomClusterName();
  const token = randomBytes(24).toString('hex');
  // nats-server's pprof port: the soak samples its live heap and goroutines (process-sampler).
  const profilePort = await getFreePort();
  const nats: NatsServerHandle = await startNatsServer({
    args: ['--profile', String(profilePort)],
  });
  const servers: Record<string, ServerProcess> = {};
  let stopping = false;

  const spawnServer = (name: string, args: string[], env: Record<string, string>) => {
    const log = createWriteStream(path.join(options.dir, `${name}.log`));
    const child = spawn(process.execPath, [cli, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        NODE_OPTIONS: `${process.env['NODE_OPTIONS'] ?? ''} --require ${probe}`.trim(),
        TROUPE_SOAK_PROBE_DIR: options.dir,
        TROUPE_SOAK_PROBE_MS: String(options.probeMs),
        TROUPE_CLUSTER: cluster,
        TROUPE_NATS_URL: nats.url,
        TROUPE_LOG_LEVEL: 'warn',
        ...env,
      },
    });
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    const server: ServerProcess = { child };
    // An exit before stop() is a crash the soak reports; the stop's own exits are not.
    child.once('exit', (code, signal) => {
      if (!stopping) server.exit = `${code ?? signal}`;
    });
    servers[name] = server;
    return server;
  };

  const ready = async (name: string, file: string): Promise<unknown> => {
    const server = servers[name] as ServerProcess;
    const died = new AbortController();
    const onExit = () =>
      died.abort(new Error(`${name} exited ${server.exit}; see ${options.dir}/${name}.log`));
    if (server.exit !== undefined) onExit();
    server.child.once('exit', onExit);
    try {
      await waitFor(() => existsSync(file) && readFileSync(file, 'utf8').trim() !== '', {
        timeoutMs: 120_000,
        intervalMs: 200,
        signal: died.signal,
        message: `${name} ready (${file})`,
      });
    } finally {
      server.child.off('exit', onExit);
    }
    return JSON.parse(readFileSync(file, 'utf8')) as unknown;
  };

  const stop = async () => {
    stopping = true;
    for (const server of Object.values(servers)) {
      if (server.child.exitCode === null && server.child.signalCode === null) {
        const exited = new Promise((r) => server.child.once('exit', r));
        server.child.kill('SIGTERM');
        const hard = setTimeout(() => server.child.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(hard);
      }
    }
    await nats.stop();
  };

  try {
    const coordinatorReady = path.join(options.dir, 'coordinator.ready');
    spawnServer('coordinator', ['coordinator', '--ready-file', coordinatorReady], {
      TROUPE_GRPC_HOST: '127.0.0.1',
      TROUPE_GRPC_PORT: '0',
      TROUPE_GRPC_TOKEN: token,
      TROUPE_METRICS_PORT: 'off',
      // Finished jobs' task actors and sandboxes go after 30 s (default 10 min), so even the
      // short profile judges a cluster that deletes them.
      TROUPE_ACTOR_RETENTION_MS: '30000',
      // …and finished jobs themselves (records, results, events, artifacts; 30 s by default): a
      // cluster that keeps every result grows with them by design, not what the soak judges.
      TROUPE_JOB_RETENTION_MS:
        options.jobRetentionMs === null ? 'never' : String(options.jobRetentionMs),
    });
    const { grpcPort } = (await ready('coordinator', coordinatorReady)) as { grpcPort: number };
    const agentReady = path.join(options.dir, 'node-agent.ready');
    spawnServer('node-agent', ['node-agent', '--ready-file', agentReady], {
      TROUPE_HOST_ID: `soak-${cluster.slice(-6)}`,
      TROUPE_BACKEND: options.backend,
      TROUPE_SLOTS: `sandbox=${options.slots}`,
      TROUPE_VM: 'off',
      ...(options.backend === 'process' ? { TROUPE_ALLOW_PROCESS_BACKEND: 'true' } : {}),
    });
    await ready('node-agent', agentReady);
    const pidOf = (name: string) => (servers[name] as ServerProcess).child.pid as number;
    return {
      cluster,
      address: `127.0.0.1:${grpcPort}`,
      token,
      processes: [
        { name: 'coordinator', pid: pidOf('coordinator'), probeDir: options.dir },
        { name: 'node-agent', pid: pidOf('node-agent'), probeDir: options.dir },
        {
          name: 'nats-server',
          pid: nats.pid,
          goProfileUrl: `http://127.0.0.1:${profilePort}`,
          natsMonitorUrl: nats.monitorUrl,
        },
      ],
      exited: () =>
        Object.entries(servers)
          .filter(([, s]) => s.exit !== undefined)
          .map(([name, s]) => `${name} exited ${s.exit}`),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
