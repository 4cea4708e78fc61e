/**
 * perf/coordinator-budget: the budget ledger under 100 concurrent callers.
 *   budget_pairs_per_s  reserve+settle pairs completed per s (100 callers, one budget tree)
 *   budget_overshoot    reservations granted beyond the hard cap in a race to exhaust a job
 *                       budget (100 callers reserving and settling until refused), plus any
 *                       scope whose committed state breaks spent + reserved <= limit; must be 0
 * Baselines in the same run, printed as ratios (not part of the result line): sequential
 * JetStream KV compare-and-set updates of one key (a ledger commits one per message, so a pair
 * costs two), and a trivial actor that commits a one-field state per ask under the same 100
 * callers (the actor runtime's own floor for a committing ask).
 */
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { ActorSystem, defineActor } from '@troupe/actors';
import {
  BudgetLedger,
  BudgetLedgerActor,
  checkLedger,
  LedgerStateSchema,
} from '@troupe/coordinator';
import { isBudgetExhausted } from '@troupe/proto';
import { randomClusterName, startNatsServer } from '@troupe/testkit';
import { z } from 'zod';
import { median, nowUs, printResult, printTable } from '../lib/report';

const CALLERS = 100;
const PAIRS = 4_000;
const KV_UPDATES = 2_000;
const RACE_LIMIT_USD = 10;
const RACE_AMOUNT_USD = 0.07; // floor(10 / 0.07) = 142 pairs fit

const hold = { ttlMs: 60_000, holder: 'perf' };

/** The runtime's floor: an ask whose handler commits a tiny state. */
const Tally = defineActor({
  kind: 'perf-tally',
  state: z.object({ n: z.number().int() }),
  initialState: () => ({ n: 0 }),
  messages: { bump: z.object({}) },
  handlers: { bump: (_ctx, _msg, state) => ({ state: { n: state.n + 1 }, reply: state.n + 1 }) },
  idleTimeoutMs: 600_000,
});

async function actorBaseline(system: ActorSystem): Promise<number> {
  const ref = system.ref(Tally, 'floor');
  await ref.ask('bump', {});
  const t0 = nowUs();
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      for (let i = 0; i < (2 * PAIRS) / CALLERS; i++) await ref.ask('bump', {});
    }),
  );
  return (2 * PAIRS) / ((nowUs() - t0) / 1e6);
}

async function kvBaseline(url: string): Promise<number> {
  const nc = await connect({ servers: url });
  try {
    const kv = await new Kvm(nc).create(`perf_budget_${Date.now()}`);
    const value = new TextEncoder().encode(JSON.stringify({ x: 'y'.repeat(256) }));
    let revision = await kv.put('k', value);
    const t0 = nowUs();
    for (let i = 0; i < KV_UPDATES; i++) revision = await kv.update('k', value, revision);
    return KV_UPDATES / ((nowUs() - t0) / 1e6);
  } finally {
    await nc.close();
  }
}

async function main(): Promise<void> {
  const server = await startNatsServer();
  const cluster = randomClusterName();
  const system = await ActorSystem.start({
    cluster,
    servers: server.url,
    hosting: [BudgetLedgerActor, Tally],
  });
  const callers = await ActorSystem.start({ cluster, servers: server.url });
  try {
    const kvPerS = await kvBaseline(server.url);
    const actorAsksPerS = await actorBaseline(callers);
    const admin = new BudgetLedger(system);
    const ledger = new BudgetLedger(callers);
    await admin.setLimit('cluster', { usd: 1_000_000 });
    await admin.createScope('job:bench', 'cluster', { usd: 100_000 });
    for (let c = 0; c < CALLERS; c++) await admin.createScope(`agent:bench/c${c}`, 'job:bench');

    // ---- throughput: reserve + settle pairs, 100 callers ------------------------------------
    await ledger
      .reserve('job:bench', { usd: 0.01, tokens: 10 }, hold)
      .then((r) => ledger.settle(r.id, { usd: 0.01, tokens: 10 }));
    const pairUs: number[] = [];
    const t0 = nowUs();
    await Promise.all(
      Array.from({ length: CALLERS }, async (_, c) => {
        for (let i = 0; i < PAIRS / CALLERS; i++) {
          const s = nowUs();
          const r = await ledger.reserve(`agent:bench/c${c}`, { usd: 0.02, tokens: 500 }, hold);
          await ledger.settle(r.id, { usd: 0.01, tokens: 300 });
          pairUs.push(nowUs() - s);
        }
      }),
    );
    const pairsPerS = PAIRS / ((nowUs() - t0) / 1e6);
    const stateBytes = JSON.stringify((await system.states.read(ledger.address))?.record).length;

    // ---- overshoot: race to exhaust a job budget -------------------------------------------
    await admin.createScope('job:race', 'cluster', { usd: RACE_LIMIT_USD });
    let granted = 0;
    let refused = 0;
    await Promise.all(
      Array.from({ length: CALLERS }, async () => {
        for (;;) {
          try {
            const r = await ledger.reserve('job:race', { usd: RACE_AMOUNT_USD, tokens: 1 }, hold);
            granted++;
            await ledger.settle(r.id, { usd: RACE_AMOUNT_USD, tokens: 1 });
          } catch (err) {
            if (!isBudgetExhausted(err)) throw err;
            refused++;
            return;
          }
        }
      }),
    );
    const fit = Math.floor(Math.round(RACE_LIMIT_USD * 1e9) / Math.round(RACE_AMOUNT_USD * 1e9));
    const race = await admin.get('job:race');
    const stored = await system.states.read(ledger.address);
    const violations = checkLedger(LedgerStateSchema.parse(stored?.record.data));
    const overshoot = Math.max(0, granted - fit) + violations.length;

    printTable('coordinator-budget', {
      callers: CALLERS,
      pairs: PAIRS,
      budget_pairs_per_s: pairsPerS,
      pair_latency_p50_ms: median(pairUs) / 1e3,
      ledger_state_bytes: stateBytes,
      kv_cas_updates_per_s: kvPerS,
      'pairs_per_s / (kv_cas_per_s / 2)': pairsPerS / (kvPerS / 2),
      committing_actor_asks_per_s: actorAsksPerS,
      'pairs_per_s / (actor_asks_per_s / 2)': pairsPerS / (actorAsksPerS / 2),
      race_limit_usd: RACE_LIMIT_USD,
      race_amount_usd: RACE_AMOUNT_USD,
      race_fit: fit,
      race_granted: granted,
      race_refused: refused,
      race_spent_usd: race.spent.usd,
      invariant_violations: violations.length,
    });
    printResult('coordinator-budget', {
      budget_pairs_per_s: pairsPerS,
      budget_overshoot: overshoot,
    });
  } finally {
    await callers.shutdown({ graceMs: 1_000 });
    await system.shutdown({ graceMs: 1_000 });
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
