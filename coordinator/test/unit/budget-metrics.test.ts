import { Registry } from 'prom-client';
import { budgetMetricSamples, registerBudgetMetrics } from '../../src/budget/budget-metrics';
import {
  createScope,
  emptyLedgerState,
  reserve,
  setLimit,
  settle,
  snapshot,
} from '../../src/budget/ledger-state';
import { actualAmount, worstCaseAmount } from '../../src/budget/model-call-cost';

function ledgerSnapshot() {
  let s = emptyLedgerState('cluster');
  s = setLimit(s, 'cluster', { usd: 10 }, 0).state;
  s = createScope(s, { scope: 'job:j', parent: 'cluster', limits: { tokens: 500 } }, 0).state;
  const r = reserve(
    s,
    { scope: 'job:j', usd: 1, tokens: 100, ttlMs: 1_000, holder: 'h', requestId: 'a' },
    0,
  );
  s = r.state;
  s = reserve(
    s,
    { scope: 'job:j', usd: 1, tokens: 100, ttlMs: 1_000, holder: 'h', requestId: 'b' },
    0,
  ).state;
  if (r.reply.ok) s = settle(s, r.reply.id, { usd: 0.5, tokens: 40 }, 0).state;
  return snapshot(s, 0).reply;
}

test('a snapshot flattens into per-scope and per-outcome samples', () => {
  const samples = budgetMetricSamples(ledgerSnapshot());
  const value = (name: string, labels: Record<string, string>) =>
    samples.find(
      (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
    )?.value;
  expect(value('troupe_budget_limit_usd', { scope: 'cluster' })).toBe(10);
  expect(value('troupe_budget_limit_usd', { scope: 'job:j' })).toBeUndefined();
  expect(value('troupe_budget_limit_tokens', { scope: 'job:j' })).toBe(500);
  expect(value('troupe_budget_spent_usd', { scope: 'cluster' })).toBe(0.5);
  expect(value('troupe_budget_reserved_tokens', { scope: 'job:j' })).toBe(100);
  expect(value('troupe_budget_reservations', { scope: 'cluster' })).toBe(1);
  expect(value('troupe_budget_operations_total', { outcome: 'reserved' })).toBe(2);
  expect(value('troupe_budget_operations_total', { outcome: 'settled' })).toBe(1);
  const jobsOnly = budgetMetricSamples(ledgerSnapshot(), (u) => u.scope === 'cluster');
  expect(jobsOnly.some((s) => s.labels['scope'] === 'job:j')).toBe(false);
});

test('registered metrics read the snapshots once per scrape', async () => {
  const registry = new Registry();
  let reads = 0;
  registerBudgetMetrics(registry, async () => {
    reads++;
    return [ledgerSnapshot()];
  });
  const text = await registry.metrics();
  expect(text).toContain('troupe_budget_spent_usd{root="cluster",scope="cluster"} 0.5');
  expect(text).toContain('troupe_budget_operations_total{root="cluster",outcome="reserved"} 2');
  expect(reads).toBe(1);
});

test('worst case = prompt estimate x input price + max_tokens x output price', () => {
  const prices = { inputUsdPerMTok: 2, outputUsdPerMTok: 8 };
  expect(worstCaseAmount({ promptTokens: 1_000, maxTokens: 500 }, prices)).toEqual({
    usd: 0.006,
    tokens: 1_500,
  });
  expect(actualAmount({ promptTokens: 1_000, completionTokens: 100 }, prices)).toEqual({
    usd: 0.0028,
    tokens: 1_100,
  });
  expect(() => worstCaseAmount({ promptTokens: -1, maxTokens: 1 }, prices)).toThrow(/promptTokens/);
});
