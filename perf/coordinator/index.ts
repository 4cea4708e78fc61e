/**
 * perf/coordinator: the coordinator's scheduling paths, with baselines in the same run.
 *   wake_latency_p50_ms   post to a SLEEPING actor → handler start (the coordinator's wake
 *                         consumer activates it on a registered host), median
 *   wake_latency_ratio    that median / the median of the same post to an already ACTIVE actor
 *   activations_per_s     distinct actors activated per s across 2 host processes (64 asks in
 *                         flight from a client process; the coordinator runs in the client)
 *   budget_pairs_per_s,   from perf/coordinator-budget (run as a child, its JSON line reused)
 *   budget_overshoot
 *
 * Fairness: the measuring process waits for HIT lines on events (no polling loop competing for
 * the 2 cores with the hosts and nats-server); the hosts get the same node flags as this process
 * and are stopped with SIGTERM so they can flush (e.g. `--cpu-prof`); the CPU time each process
 * (and nats-server) spent in the activation window is printed, so a gain can be attributed.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ActorSystem } from '@troupe/actors';
import { Coordinator } from '@troupe/coordinator';
import { randomClusterName, startNatsServer } from '@troupe/testkit';
import { Probe } from './probe';
import { median, nowUs, printResult, printTable, quantile } from '../lib/report';

const WAKE_SAMPLES = 100;
const ACTIVATIONS = 2_000;

async function until(pred: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error('perf: condition not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** CPU seconds (user + system) a process has used so far, from /proc (0 when unreadable). */
function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in clock ticks
  } catch {
    return 0;
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

async function main(): Promise<void> {
  const server = await startNatsServer();
  const cluster = randomClusterName();
  const coordinator = await Coordinator.start({
    cluster,
    nats: { servers: server.url },
    heartbeatMs: 500,
    metrics: { port: null },
  });
  // Hosts are separate processes, as in a deployment; each prints HIT <monotonic ns> per wake.
  const hits: bigint[] = [];
  let onHit: (() => void) | undefined;
  const nextHit = (before: number): Promise<bigint> =>
    new Promise((resolve, reject) => {
      if (hits.length > before) return resolve(hits[before]!);
      const timer = setTimeout(() => reject(new Error('perf: no HIT in 20 s')), 20_000);
      onHit = () => {
        if (hits.length <= before) return;
        clearTimeout(timer);
        onHit = undefined;
        resolve(hits[before]!);
      };
    });
  const hosts: ChildProcess[] = ['h1', 'h2'].map((hostId) => {
    const child = spawn(
      process.execPath,
      [...process.execArgv, path.join(__dirname, 'host.js'), server.url, cluster, hostId],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let buf = '';
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split('\n');
      buf = lines.pop()!;
      for (const l of lines) if (l.startsWith('HIT ')) hits.push(BigInt(l.slice(4)));
      onHit?.();
    });
    return child;
  });
  const client = await ActorSystem.start({ cluster, servers: server.url });
  try {
    // The coordinator itself (budget ledger host) and the two probe hosts.
    await until(() => (coordinator.registry?.schedulable().length ?? 0) >= 3, 20_000);

    // ---- wake latency: sleeping vs active ---------------------------------------------------
    const sleeping: number[] = [];
    const active: number[] = [];
    for (let i = 0; i < WAKE_SAMPLES; i++) {
      const ref = client.ref(Probe, `wake-${i}`);
      let t0 = process.hrtime.bigint();
      let hit = nextHit(hits.length);
      await ref.post('hit', {});
      sleeping.push(Number((await hit) - t0) / 1e6);
      t0 = process.hrtime.bigint();
      hit = nextHit(hits.length);
      await ref.post('hit', {});
      active.push(Number((await hit) - t0) / 1e6);
    }

    // ---- activations across two hosts -----------------------------------------------------
    const pids = {
      'client+coordinator': process.pid,
      h1: hosts[0]!.pid,
      h2: hosts[1]!.pid,
      'nats-server': server.pid,
    };
    const cpuBefore = Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, cpuSeconds(p)]));
    let next = 0;
    const t0 = nowUs();
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < ACTIVATIONS) {
          await client.ref(Probe, `act-${next++}`).ask('ping', {}, { timeoutMs: 60_000 });
        }
      }),
    );
    const elapsedS = (nowUs() - t0) / 1e6;
    const activationsPerS = ACTIVATIONS / elapsedS;
    const cpuMsPerActivation = Object.entries(pids)
      .map(
        ([k, p]) => `${k} ${(((cpuSeconds(p) - cpuBefore[k]!) * 1000) / ACTIVATIONS).toFixed(2)}`,
      )
      .join(' / ');
    const perHost = (coordinator.registry?.list() ?? [])
      .filter((h) => h.info.kinds.includes('probe'))
      .map((h) => `${h.info.hostId}:${h.load['probe'] ?? 0}`);

    // ---- budget ledger (its own suite, run as a child) --------------------------------------
    const out = execFileSync(
      process.execPath,
      [path.join(__dirname, '../coordinator-budget/index.js')],
      {
        encoding: 'utf8',
        maxBuffer: 16 * 1024 * 1024,
      },
    );
    const last = out.trim().split('\n').pop() ?? '{}';
    const budget = (JSON.parse(last) as { metrics: Record<string, number> }).metrics;

    const metrics = {
      wake_latency_p50_ms: median(sleeping),
      wake_latency_ratio: median(sleeping) / median(active),
      activations_per_s: activationsPerS,
      budget_pairs_per_s: budget['budget_pairs_per_s'] ?? Number.NaN,
      budget_overshoot: budget['budget_overshoot'] ?? Number.NaN,
    };
    printTable('coordinator (1 coordinator, 2 hosts, one nats-server)', {
      'wake of a sleeping actor p50 (ms)': median(sleeping),
      'wake of a sleeping actor p99 (ms)': quantile(sleeping, 0.99),
      'post to an active actor p50 (ms)': median(active),
      'activations/s across 2 hosts': activationsPerS,
      'CPU ms per activation': cpuMsPerActivation,
      'live probes per host (last heartbeat)': perHost.join(' / '),
      'budget reserve+settle pairs/s (100 callers)': metrics.budget_pairs_per_s,
      'budget overshoot': metrics.budget_overshoot,
    });
    printResult('coordinator', metrics);
  } finally {
    await client.shutdown();
    await Promise.all(hosts.map(stopChild));
    await coordinator.stop();
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
