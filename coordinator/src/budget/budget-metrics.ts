import { Counter, Gauge, type Registry } from 'prom-client';
import { type LedgerCounters, type LedgerSnapshot, type ScopeUsage } from './ledger-state';

/** One metric sample derived from a ledger snapshot. */
export interface BudgetMetricSample {
  /** Prometheus metric name. */
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** What the budget metrics are called and mean. */
export const BUDGET_METRICS = {
  troupe_budget_limit_usd: 'Dollar limit of a budget scope (absent when unlimited)',
  troupe_budget_limit_tokens: 'Token limit of a budget scope (absent when unlimited)',
  troupe_budget_limit_requests: 'Model-call limit of a budget scope (absent when unlimited)',
  troupe_budget_spent_usd: 'Dollars spent (settled) in a budget scope and its subtree',
  troupe_budget_spent_tokens: 'Tokens spent (settled) in a budget scope and its subtree',
  troupe_budget_spent_requests: 'Model calls settled in a budget scope and its subtree',
  troupe_budget_reserved_usd: 'Dollars held by open reservations in a budget scope and its subtree',
  troupe_budget_reserved_tokens:
    'Tokens held by open reservations in a budget scope and its subtree',
  troupe_budget_reserved_requests:
    'Model calls held by open reservations in a budget scope and its subtree',
  troupe_budget_reservations: 'Open reservations in a budget scope and its subtree',
  troupe_budget_operations_total:
    'Budget ledger operations by outcome since the ledger was created',
} as const;

type MetricName = keyof typeof BUDGET_METRICS;

const OUTCOMES: Record<keyof LedgerCounters, string> = {
  reserved: 'reserved',
  refused: 'refused',
  settled: 'settled',
  released: 'released',
  expired: 'expired',
  lateSettled: 'late_settled',
  overspent: 'overspent',
};

/**
 * Flattens a ledger snapshot into metric samples: per scope (labels `root`, `scope`) its limits,
 * spent, reserved and open reservations; per ledger the operation counters (label `outcome`).
 * `includeScope` limits label cardinality (e.g. only `cluster` and `job:` scopes).
 */
export function budgetMetricSamples(
  snapshot: LedgerSnapshot,
  includeScope: (usage: ScopeUsage) => boolean = () => true,
): BudgetMetricSample[] {
  const samples: BudgetMetricSample[] = [];
  const root = snapshot.root;
  for (const usage of snapshot.scopes) {
    if (!includeScope(usage)) continue;
    const labels = { root, scope: usage.scope };
    const push = (name: MetricName, value: number | null): void => {
      if (value !== null) samples.push({ name, labels, value });
    };
    push('troupe_budget_limit_usd', usage.limit.usd);
    push('troupe_budget_limit_tokens', usage.limit.tokens);
    push('troupe_budget_limit_requests', usage.limit.requests);
    push('troupe_budget_spent_usd', usage.spent.usd);
    push('troupe_budget_spent_tokens', usage.spent.tokens);
    push('troupe_budget_spent_requests', usage.spent.requests);
    push('troupe_budget_reserved_usd', usage.reserved.usd);
    push('troupe_budget_reserved_tokens', usage.reserved.tokens);
    push('troupe_budget_reserved_requests', usage.reserved.requests);
    push('troupe_budget_reservations', usage.reservations);
  }
  for (const [key, outcome] of Object.entries(OUTCOMES)) {
    samples.push({
      name: 'troupe_budget_operations_total',
      labels: { root, outcome },
      value: snapshot.counters[key as keyof LedgerCounters],
    });
  }
  return samples;
}

/** Options of {@link registerBudgetMetrics}. */
export interface BudgetMetricsOptions {
  /** Which scopes get series. @default every scope */
  includeScope?: (usage: ScopeUsage) => boolean;
  /** Reuse one round of snapshots for scrapes this close together. @default 1000 */
  cacheMs?: number;
}

/**
 * Registers the {@link BUDGET_METRICS} on a prom-client registry; each scrape reads
 * `snapshots()` (typically `() => Promise.all(ledgers.map((l) => l.snapshot()))`) once for all
 * metrics. A failing snapshot leaves the budget series out of that scrape.
 */
export function registerBudgetMetrics(
  registry: Registry,
  snapshots: () => Promise<LedgerSnapshot[]>,
  options: BudgetMetricsOptions = {},
): void {
  const cacheMs = options.cacheMs ?? 1_000;
  let cached: { atMs: number; samples: Promise<BudgetMetricSample[]> } | undefined;
  const current = (): Promise<BudgetMetricSample[]> => {
    const now = Date.now();
    if (!cached || now - cached.atMs > cacheMs) {
      cached = {
        atMs: now,
        samples: snapshots().then(
          (all) => all.flatMap((s) => budgetMetricSamples(s, options.includeScope)),
          () => [],
        ),
      };
    }
    return cached.samples;
  };
  for (const [name, help] of Object.entries(BUDGET_METRICS)) {
    const isCounter = name.endsWith('_total');
    const labelNames = isCounter ? ['root', 'outcome'] : ['root', 'scope'];
    if (isCounter) {
      registry.registerMetric(
        new Counter({
          name,
          help,
          labelNames,
          registers: [],
          async collect() {
            this.reset();
            for (const s of await current()) if (s.name === name) this.inc(s.labels, s.value);
          },
        }),
      );
    } else {
      registry.registerMetric(
        new Gauge({
          name,
          help,
          labelNames,
          registers: [],
          async collect() {
            this.reset();
            for (const s of await current()) if (s.name === name) this.set(s.labels, s.value);
          },
        }),
      );
    }
  }
}
