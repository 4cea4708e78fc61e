/**
 * perf/coordinator: the coordinator's scheduling paths, with baselines in the same run.
 *   wake_latency_p50_ms   post to a SLEEPING actor → handler start (the coordinator's wake
 *                         consumer activates it on a registered host), median
 *   wake_latency_ratio    that median / the median of the same post to an already ACTIVE actor
 *   activations_per_s     distinct actors activated per s across 2 hosts (64 asks in flight)
 *   budget_pairs_per_s,   from perf/coordinator-budget (run as a child, its JSON line reused)
 *   budget_overshoot
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { ActorSystem, defineActor } from '@troupe/actors';
import { Coordinator } from '@troupe/coordinator';
import { randomClusterName, startNatsServer } from '@troupe/testkit';
import { z } from 'zod';
import { median, nowUs, printResult, printTable, quantile } from '../lib/report';

const WAKE_SAMPLES = 100;
const ACTIVATIONS = 2_000;

let started = 0;
let lastStartUs = 0;
const Probe = defineActor({
  kind: 'probe',
  state: z.object({ n: z.number().int() }),
  initialState: () => ({ n: 0 }),
  messages: { hit: z.object({}), ping: z.object({}) },
  handlers: {
    hit: () => {
      lastStartUs = nowUs();
      started++;
    },
    ping: () => ({ reply: 'pong' }),
  },
  idleTimeoutMs: 600_000,
});

async function until(pred: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error('perf: condition not reached in time');
    await new Promise((r) => setImmediate(r));
  }
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
  const hosts = await Promise.all(
    ['h1', 'h2'].map((hostId) =>
      ActorSystem.start({
        cluster,
        servers: server.url,
        hostId,
        hosting: [Probe],
        placement: 'none',
      }),
    ),
  );
  const client = await ActorSystem.start({ cluster, servers: server.url });
  try {
    await until(() => (coordinator.registry?.schedulable().length ?? 0) >= 3, 20_000);

    // ---- wake latency: sleeping vs active ---------------------------------------------------
    const sleeping: number[] = [];
    const active: number[] = [];
    for (let i = 0; i < WAKE_SAMPLES; i++) {
      const ref = client.ref(Probe, `wake-${i}`);
      let before = started;
      let t0 = nowUs();
      await ref.post('hit', {});
      await until(() => started > before, 20_000);
      sleeping.push((lastStartUs - t0) / 1_000);
      before = started;
      t0 = nowUs();
      await ref.post('hit', {});
      await until(() => started > before, 20_000);
      active.push((lastStartUs - t0) / 1_000);
    }

    // ---- activations across two hosts -----------------------------------------------------
    let next = 0;
    const t0 = nowUs();
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < ACTIVATIONS) {
          await client.ref(Probe, `act-${next++}`).ask('ping', {}, { timeoutMs: 60_000 });
        }
      }),
    );
    const activationsPerS = ACTIVATIONS / ((nowUs() - t0) / 1e6);
    const perHost = hosts.map((h) => h.activationsStarted);

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
      'activations per host': perHost.join(' / '),
      'budget reserve+settle pairs/s (100 callers)': metrics.budget_pairs_per_s,
      'budget overshoot': metrics.budget_overshoot,
    });
    printResult('coordinator', metrics);
  } finally {
    await client.shutdown();
    for (const h of hosts) await h.shutdown({ graceMs: 1_000 });
    await coordinator.stop();
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
