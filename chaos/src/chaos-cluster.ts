import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { kvBucketName } from '@troupe/proto';
import { TroupeClient } from '@troupe/client';
import { spawnNodeProcess, type TestProcess } from '@troupe/test-cluster';
import {
  ensureDocker,
  getFreePort,
  type NatsClusterHandle,
  randomClusterName,
  startNatsCluster,
  startTcpProxy,
  type TcpProxyHandle,
  waitFor,
} from '@troupe/testkit';
import type Docker from 'dockerode';
import type { FaultTarget } from './fault-schedule';

/** The built `troupe` CLI: `troupe coordinator` registers the shipped job drivers. */
const CLI = path.resolve(__dirname, '..', '..', 'client', 'dist', 'cli', 'main.js');

/** Options of {@link ChaosCluster.start}. */
export interface ChaosClusterOptions {
  /** @default 2 */
  coordinators?: number;
  /** @default 3 */
  nodeAgents?: number;
  /** Sandbox slots of each node agent. @default 4 */
  slots?: number;
  /** Progress lines. */
  log: (line: string) => void;
  /**
   * A folder that receives every coordinator's and node agent's output, one file per member
   * (`coordinator#0.log`…), appended across restarts. @default none
   */
  logDir?: string;
}

interface Member {
  readonly name: string;
  process: TestProcess;
  readonly spawn: () => TestProcess;
  readonly readyLine: string;
}

/**
 * The cluster the chaos harness breaks: a three-server JetStream cluster (replicas 3, servers
 * started with `--no_advertise` so a client only knows the URLs it was given), coordinator
 * processes of the `troupe` CLI (every shipped driver, the job API on a fixed port each, a 2 s
 * leader lease) and node-agent processes that reach NATS only through TCP proxies of their own,
 * so cutting the proxies partitions one node agent from everything. Heartbeats are the test
 * clusters' fast ones (250 ms, dead after 1 s).
 */
export class ChaosCluster {
  private constructor(
    readonly cluster: string,
    readonly token: string,
    readonly nats: NatsClusterHandle,
    readonly docker: Docker,
    /** The harness's own connection (every server's URL). */
    readonly nc: NatsConnection,
    readonly grpcPorts: readonly number[],
    private readonly coordinators: Member[],
    private readonly nodeAgents: Member[],
    private readonly proxies: readonly (readonly TcpProxyHandle[])[],
    private readonly tempFiles: readonly string[],
  ) {}

  /** Clusters started in this process and not yet stopped, for {@link killAllClustersNow}. */
  private static readonly running = new Set<ChaosCluster>();

  /** Processes the harness killed or stopped itself (not crashes). */
  private readonly killedByUs = new WeakSet<TestProcess>();
  /** Crashes noticed and not yet taken by {@link takeCrashes}. */
  private readonly crashes: string[] = [];

  /** Starts the cluster and waits until every process is up and every node agent is listed. */
  static async start(options: ChaosClusterOptions): Promise<ChaosCluster> {
    const docker = await ensureDocker();
    const cluster = randomClusterName();
    const token = randomBytes(24).toString('hex');
    options.log(`starting a 3-server JetStream cluster for ${cluster}`);
    const nats = await startNatsCluster({ size: 3, args: ['--no_advertise'] });
    const nc = await connect({ servers: nats.urls, maxReconnectAttempts: -1 });
    const coordinators: Member[] = [];
    const nodeAgents: Member[] = [];
    const proxies: TcpProxyHandle[][] = [];
    const tempFiles: string[] = [];
    const grpcPorts: number[] = [];
    const self = new ChaosCluster(
      cluster,
      token,
      nats,
      docker,
      nc,
      grpcPorts,
      coordinators,
      nodeAgents,
      proxies,
      tempFiles,
    );
    ChaosCluster.running.add(self);
    try {
      for (let i = 0; i < (options.coordinators ?? 2); i++) {
        const port = await getFreePort();
        grpcPorts.push(port);
        const configFile = path.join(os.tmpdir(), `troupe-chaos-${cluster}-coordinator-${i}.json`);
        tempFiles.push(configFile);
        // JSON is YAML. The test clusters' fast failure detection, a short leader lease.
        writeFileSync(
          configFile,
          JSON.stringify({
            heartbeatMs: 250,
            missedHeartbeats: 4,
            sweepIntervalMs: 500,
            shutdownGraceMs: 0,
            replicas: 3,
            leaseMs: 2_000,
            renewMs: 400,
            grpc: { host: '127.0.0.1', port, token },
          }),
        );
        const name = `coordinator#${i}`;
        const spawn = () =>
          keepLog(options.logDir, name)(CLI, ['coordinator', '--config', configFile], {
            env: {
              TROUPE_CLUSTER: cluster,
              TROUPE_NATS_URL: nats.urls.join(','),
              TROUPE_COORDINATOR_ID: `chaos-coord-${i}`,
              TROUPE_METRICS_PORT: 'off',
              TROUPE_LOG_LEVEL: process.env['TROUPE_CHAOS_LOG_LEVEL'] ?? 'info',
              // A crash prints where the error was thrown, not only where it was made.
              NODE_OPTIONS: '--trace-uncaught',
            },
          });
        coordinators.push({
          name,
          process: spawn(),
          spawn,
          readyLine: 'coordinator serving the job API',
        });
      }
      for (let i = 0; i < (options.nodeAgents ?? 3); i++) {
        const own = await Promise.all(
          nats.servers.map((s) => startTcpProxy({ target: { port: s.port } })),
        );
        proxies.push(own);
        const name = `node-agent#${i}`;
        const spawn = () =>
          keepLog(options.logDir, name)(CLI, ['node-agent'], {
            env: {
              TROUPE_CLUSTER: cluster,
              TROUPE_NATS_URL: own.map((p) => p.url).join(','),
              TROUPE_HOST_ID: `chaos-agent-${i}`,
              TROUPE_SLOTS: `sandbox=${options.slots ?? 4}`,
              TROUPE_METRICS_PORT: 'off',
              TROUPE_LOG_LEVEL: process.env['TROUPE_CHAOS_LOG_LEVEL'] ?? 'info',
              // A crash prints where the error was thrown, not only where it was made.
              NODE_OPTIONS: '--trace-uncaught',
              TROUPE_VM: 'off',
            },
          });
        nodeAgents.push({ name, process: spawn(), spawn, readyLine: 'node agent serving' });
      }
      for (const m of [...coordinators, ...nodeAgents]) await self.waitReady(m);
      // Node information is served by the leader alone: ask every coordinator.
      const clients = grpcPorts.map(
        (port) => new TroupeClient({ address: `127.0.0.1:${port}`, token, timeoutMs: 10_000 }),
      );
      try {
        const ready = async (client: TroupeClient) =>
          (await client.listNodes()).filter((n) => n.state === 'NODE_READY').length;
        await waitFor(
          async () =>
            (await Promise.all(clients.map((cl) => ready(cl).catch(() => 0)))).some(
              (n) => n >= nodeAgents.length,
            ),
          { timeoutMs: 60_000, message: `all ${nodeAgents.length} node agents ready` },
        );
      } finally {
        for (const cl of clients) cl.close();
      }
      options.log(
        `cluster up: ${coordinators.length} coordinators, ${nodeAgents.length} node agents`,
      );
    } catch (err) {
      await self.stop();
      throw err;
    }
    return self;
  }

  /** A job API client that uses whichever coordinator answers (grpc-js pick_first over all). */
  client(): TroupeClient {
    return new TroupeClient({
      address: `ipv4:${this.grpcPorts.map((p) => `127.0.0.1:${p}`).join(',')}`,
      token: this.token,
      timeoutMs: 30_000,
      retry: { maxAttempts: 20, initialBackoffMs: 200, maxBackoffMs: 2_000 },
    });
  }

  /** The pid of a process of the cluster. */
  pidOf(target: FaultTarget): number {
    if (target.role === 'docker') return dockerdPid();
    if (target.role === 'nats') return this.natsServer(target.index).pid;
    const pid = this.member(target).process.child.pid;
    if (pid === undefined) throw new Error(`${this.member(target).name} has no pid`);
    return pid;
  }

  /** Index of the coordinator holding the leader lease (holder `chaos-coord-<i>`). */
  async leaderIndex(): Promise<number> {
    const kv = await new Kvm(this.nc).open(kvBucketName(this.cluster, 'leases'));
    const holder = (await kv.get('coordinator'))?.json<{ holder?: string }>().holder ?? '';
    const index = Number(/^chaos-coord-(\d+)$/.exec(holder)?.[1] ?? NaN);
    if (!Number.isInteger(index)) throw new Error(`no coordinator holds the lease ('${holder}')`);
    return index;
  }

  /** `kill -9` of a coordinator or node agent (waits for its exit). */
  async killMember(target: FaultTarget): Promise<void> {
    const m = this.member(target);
    this.noteCrash(m);
    this.killedByUs.add(m.process);
    await m.process.kill('SIGKILL');
  }

  /**
   * Coordinators and node agents that exited without the harness killing them since the last
   * call (each described with its exit and the error it printed), started again so the run goes
   * on. A process of Troupe must never end on its own under faults: each is a violation.
   */
  async takeCrashes(): Promise<string[]> {
    for (const m of this.members()) {
      if (this.noteCrash(m)) await this.restartMember(m);
    }
    return this.crashes.splice(0);
  }

  /** Records `m` as crashed when its process exited and the harness did not kill it. */
  private noteCrash(m: Member): boolean {
    const child = m.process.child;
    if (this.killedByUs.has(m.process) || (child.exitCode === null && child.signalCode === null)) {
      return false;
    }
    this.killedByUs.add(m.process); // reported once
    const error =
      m.process.lines.findLast((l) => /^(ERR )?[A-Z]\w*Error\b/.test(l)) ?? m.process.lines.at(-1);
    this.crashes.push(
      `${m.name} exited on its own (${child.exitCode ?? child.signalCode}): ${error ?? 'no output'}`,
    );
    return true;
  }

  private members(): Member[] {
    return [...this.coordinators, ...this.nodeAgents];
  }

  /** Starts a killed coordinator or node agent again; resolves once it says it started. */
  async restartMember(target: FaultTarget | Member): Promise<void> {
    const m = 'spawn' in target ? target : this.member(target);
    m.process = m.spawn();
    await this.waitReady(m);
  }

  /** The nats-server at `index`. */
  natsServer(index: number) {
    const server = this.nats.servers[index];
    if (!server) throw new RangeError(`no nats-server #${index}`);
    return server;
  }

  /** The TCP proxies node agent `index` reaches NATS through. */
  proxiesOf(index: number): readonly TcpProxyHandle[] {
    const own = this.proxies[index];
    if (!own) throw new RangeError(`no node agent #${index}`);
    return own;
  }

  /** Output of every coordinator and node agent process now running. */
  outputs(): { name: string; lines: readonly string[] }[] {
    return [...this.coordinators, ...this.nodeAgents].map((m) => ({
      name: m.name,
      lines: m.process.lines,
    }));
  }

  /** Processes of this cluster still alive (after {@link stop}: orphans). */
  liveProcesses(): string[] {
    const live: string[] = [];
    for (const pid of this.pidsWithClusterEnv()) {
      try {
        live.push(`${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ')}`);
      } catch {
        // Gone since.
      }
    }
    for (const s of this.nats.servers) if (s.running) live.push(`${s.pid} nats-server ${s.url}`);
    return live;
  }

  /** Pids of the processes whose environment names this cluster (`TROUPE_CLUSTER`). */
  private pidsWithClusterEnv(): number[] {
    const pids: number[] = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
      try {
        const environ = readFileSync(`/proc/${entry}/environ`, 'utf8');
        if (environ.split('\0').includes(`TROUPE_CLUSTER=${this.cluster}`)) {
          pids.push(Number(entry));
        }
      } catch {
        // Gone, or not ours to read.
      }
    }
    return pids;
  }

  /**
   * SIGKILLs every process of the cluster at once, synchronously: the coordinators, node agents
   * and nats-servers it started (those left stopped by a `sigstop` fault too: SIGKILL ends a
   * stopped process) and anything else whose environment names the cluster. For a harness that
   * must exit now (a second signal, `process.on('exit')`), where {@link stop} cannot run: nothing
   * is shut down cleanly, and the node agents' sandboxes (containers, volumes) are left behind.
   */
  killAllNow(): void {
    const pids = new Set<number>();
    for (const m of this.members()) {
      this.killedByUs.add(m.process);
      const child = m.process.child;
      // An exited child's pid may belong to another process by now.
      if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
        pids.add(child.pid);
      }
    }
    for (const s of this.nats.servers) if (s.running) pids.add(s.pid);
    for (const pid of this.pidsWithClusterEnv()) pids.add(pid);
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }

  /**
   * {@link killAllNow} of every cluster started in this process and not stopped yet: for the
   * harness's forced exit, which has no handle on the cluster `runChaos` started.
   */
  static killAllClustersNow(): void {
    for (const c of ChaosCluster.running) c.killAllNow();
  }

  /** Stops every process (SIGTERM, so node agents remove their sandboxes), proxies and servers. */
  async stop(): Promise<void> {
    await Promise.all(
      [...this.nodeAgents, ...this.coordinators].map(async (m) => {
        this.killedByUs.add(m.process);
        // A process left stopped by an interrupted fault would ignore SIGTERM.
        if (m.process.child.pid !== undefined) {
          try {
            process.kill(m.process.child.pid, 'SIGCONT');
          } catch {
            // Already gone.
          }
        }
        const exited = m.process.kill('SIGTERM');
        const timer = setTimeout(() => void m.process.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(timer);
      }),
    );
    await Promise.all(this.proxies.flat().map((p) => p.stop()));
    await this.nc.close().catch(() => undefined);
    for (const s of this.nats.servers) {
      if (s.running) {
        try {
          process.kill(s.pid, 'SIGCONT');
        } catch {
          // Already gone.
        }
      }
    }
    await this.nats.stop();
    await Promise.all(this.tempFiles.map((f) => rm(f, { force: true })));
    ChaosCluster.running.delete(this);
  }

  private member(target: FaultTarget): Member {
    const list =
      target.role === 'coordinator'
        ? this.coordinators
        : target.role === 'node-agent'
          ? this.nodeAgents
          : [];
    const m =
      target.role === 'docker' || target.role === 'nats' || target.role === 'leader'
        ? undefined
        : list[target.index];
    if (!m) throw new RangeError(`no process for ${JSON.stringify(target)}`);
    return m;
  }

  private async waitReady(m: Member): Promise<void> {
    try {
      await m.process.waitForLine((l) => l.includes(m.readyLine), 120_000);
    } catch (err) {
      throw new Error(
        `${m.name} did not log '${m.readyLine}'; its output:\n${m.process.output().slice(-4_000)}`,
        { cause: err },
      );
    }
  }
}

/**
 * {@link spawnNodeProcess}, with the output also appended to `<logDir>/<name>.log` (each start
 * marked) when `logDir` is given.
 */
function keepLog(logDir: string | undefined, name: string): typeof spawnNodeProcess {
  return (script, args, options) => {
    const p = spawnNodeProcess(script, args, options);
    if (logDir === undefined) return p;
    mkdirSync(logDir, { recursive: true });
    const file = path.join(logDir, `${name}.log`);
    appendFileSync(file, `--- ${new Date().toISOString()} started pid ${p.child.pid ?? '?'}\n`);
    const append = (d: Buffer) => appendFileSync(file, d);
    p.child.stdout?.on('data', append);
    p.child.stderr?.on('data', append);
    return p;
  };
}

/** The Docker daemon's pid (from its pid file). */
export function dockerdPid(): number {
  const pid = Number(readFileSync('/var/run/docker.pid', 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0) throw new Error('no dockerd pid in /var/run/docker.pid');
  return pid;
}
