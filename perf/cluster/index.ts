/**
 * perf/cluster: how the coordinator's cost grows with the number of hosts (issue 22 item 4).
 * For 1, 10 and 100 simulated hosts — each an `ActorSystem` with its own NATS connection that
 * registers and heartbeats with the deployment's default settings, all in one hosts process —
 * and one coordinator in a process of its own, it measures:
 *   placement_p50_ms_<n>, placement_p99_ms_<n>   an ask to a never-activated actor, one at a time
 *                        (the coordinator picks a host, the host activates, the actor answers)
 *   cpu_ms_per_task_<n>  the coordinator's CPU per activation in a burst of activations (32 in
 *                        flight); cpu_ms_per_task_net_<n> the same less the idle (heartbeat)
 *                        CPU of the burst's duration
 *   heartbeats_per_s_<n>, idle_cpu_ms_per_s_<n>   registry load with nothing to place: heartbeat
 *                        messages per second and the coordinator's CPU per second
 *   coordinator_rss_mb_<n>
 *   placement_p99_ratio  placement p99 at 100 hosts / at 1 host (goal ≤ 2), the baseline being
 *                        the 1-host run of the same script; cpu_per_task_ratio likewise
 *   npm run perf -- cluster [--hosts 1,10,100] [--samples 200] [--burst 1000]
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Kvm } from '@nats-io/kv';
import { ActorSystem } from '@troupe/actors';
import { coordSubject, KvBucket, kvBucketName } from '@troupe/proto';
import { randomClusterName, startNatsServer, waitFor } from '@troupe/testkit';
import { Probe } from '../coordinator/probe';
import { median, nowUs, printResult, printTable, quantile } from '../lib/report';

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

const SCALES = flag('hosts', '1,10,100').split(',').map(Number);
const SAMPLES = Number(flag('samples', '200'));
const BURST = Number(flag('burst', '1000'));
const IDLE_WINDOW_MS = 10_000;

/** CPU milliseconds (user + system) a process has used so far, from /proc. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / 100) * 1000;
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

/** Spawns a compiled sibling script and resolves once it prints READY. */
function spawnReady(script: string, args: string[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, [path.join(__dirname, script), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script}: not READY in 180 s`)), 180_000);
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
    child.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('READY')) {
        clearTimeout(timer);
        resolve(child);
      }
    });
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

interface ScaleResult {
  placementP50Ms: number;
  placementP99Ms: number;
  cpuMsPerTask: number;
  cpuMsPerTaskNet: number;
  heartbeatsPerS: number;
  idleCpuMsPerS: number;
  rssMb: number;
}

async function measure(servers: string, hosts: number): Promise<ScaleResult> {
  const cluster = randomClusterName();
  const coordinator = await spawnReady('coordinator.js', [servers, cluster]);
  const sims = await spawnReady('hosts.js', [servers, cluster, String(hosts)]);
  const client = await ActorSystem.start({ cluster, servers, placement: 'none' });
  try {
    const nodes = await new Kvm(client.nc).open(kvBucketName(cluster, KvBucket.NODES));
    await waitFor(
      async () => {
        let n = 0;
        for await (const k of await nodes.keys()) if (k.startsWith('sim-')) n++;
        return n >= hosts;
      },
      { timeoutMs: 120_000, intervalMs: 500, message: `${hosts} hosts registered` },
    );
    const pid = coordinator.pid!;

    // Registry load with nothing to place.
    let beats = 0;
    const sub = client.nc.subscribe(coordSubject(cluster, 'nodes', 'heartbeat'), {
      callback: () => void beats++,
    });
    const idleCpu0 = cpuMs(pid);
    const idle0 = nowUs();
    await new Promise((r) => setTimeout(r, IDLE_WINDOW_MS));
    const idleS = (nowUs() - idle0) / 1e6;
    const idleCpuMsPerS = (cpuMs(pid) - idleCpu0) / idleS;
    sub.unsubscribe();

    // Placement latency, one at a time.
    const latencies: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const t0 = nowUs();
      await client.ref(Probe, `place-${i}`).ask('ping', {}, { timeoutMs: 60_000 });
      latencies.push((nowUs() - t0) / 1000);
    }

    // CPU per activation in a burst.
    const cpu0 = cpuMs(pid);
    const burst0 = nowUs();
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < BURST) {
          await client.ref(Probe, `burst-${next++}`).ask('ping', {}, { timeoutMs: 120_000 });
        }
      }),
    );
    const burstCpuMs = cpuMs(pid) - cpu0;
    const burstS = (nowUs() - burst0) / 1e6;
    const cpuMsPerTask = burstCpuMs / BURST;
    const cpuMsPerTaskNet = Math.max(0, burstCpuMs - idleCpuMsPerS * burstS) / BURST;
    return {
      placementP50Ms: median(latencies),
      placementP99Ms: quantile(latencies, 0.99),
      cpuMsPerTask,
      cpuMsPerTaskNet,
      heartbeatsPerS: beats / idleS,
      idleCpuMsPerS,
      rssMb: rssMb(pid),
    };
  } finally {
    await client.shutdown();
    await stopChild(sims);
    await stopChild(coordinator);
  }
}

async function main(): Promise<void> {
  const server = await startNatsServer();
  try {
    const results = new Map<number, ScaleResult>();
    for (const hosts of SCALES) {
      const r = await measure(server.url, hosts);
      results.set(hosts, r);
      printTable(`${hosts} host(s)`, {
        'placement p50 (ms)': r.placementP50Ms,
        'placement p99 (ms)': r.placementP99Ms,
        'coordinator CPU ms per activation': r.cpuMsPerTask,
        '  less idle (heartbeat) CPU': r.cpuMsPerTaskNet,
        'heartbeats/s (idle)': r.heartbeatsPerS,
        'coordinator CPU ms/s (idle)': r.idleCpuMsPerS,
        'coordinator RSS (MB)': r.rssMb,
      });
    }
    const metrics: Record<string, number> = {};
    for (const [hosts, r] of results) {
      metrics[`placement_p50_ms_${hosts}`] = r.placementP50Ms;
      metrics[`placement_p99_ms_${hosts}`] = r.placementP99Ms;
      metrics[`cpu_ms_per_task_${hosts}`] = r.cpuMsPerTask;
      metrics[`cpu_ms_per_task_net_${hosts}`] = r.cpuMsPerTaskNet;
      metrics[`heartbeats_per_s_${hosts}`] = r.heartbeatsPerS;
      metrics[`idle_cpu_ms_per_s_${hosts}`] = r.idleCpuMsPerS;
      metrics[`coordinator_rss_mb_${hosts}`] = r.rssMb;
    }
    const first = results.get(Math.min(...SCALES))!;
    const last = results.get(Math.max(...SCALES))!;
    metrics['placement_p99_ratio'] = last.placementP99Ms / first.placementP99Ms;
    metrics['cpu_per_task_ratio'] = last.cpuMsPerTask / first.cpuMsPerTask;
    metrics['cpu_per_task_net_ratio'] = last.cpuMsPerTaskNet / first.cpuMsPerTaskNet;
    printResult('cluster', metrics);
  } finally {
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
