/**
 * @packageDocumentation
 * @troupe/coordinator: directory, scheduler, placement, budget ledger and job manager.
 */
export {
  BudgetAmountSchema,
  BudgetLimitsSchema,
  MAX_REQUESTS,
  MAX_TOKENS,
  MAX_USD,
  NANOS_PER_USD,
  nanosToUsd,
  usdToNanos,
  type BudgetAmount,
  type BudgetLimits,
  type BudgetLimitsInput,
  type BudgetTotals,
} from './budget/budget-amount';
export {
  BudgetLedger,
  budgetExhaustedError,
  type BudgetCallOptions,
  type BudgetLedgerOptions,
  type ReleaseResult,
  type Reservation,
  type ReserveOptions,
  type SettleResult,
} from './budget/budget-ledger';
export {
  BUDGET_LEDGER_KIND,
  BudgetLedgerActor,
  createBudgetLedgerActor,
  type BudgetLedgerActorOptions,
  type BudgetLedgerDefinition,
} from './budget/budget-ledger-actor';
export {
  checkLedger,
  DEFAULT_LEDGER_CONFIG,
  emptyLedgerState,
  LedgerStateSchema,
  type BudgetExhaustion,
  type BudgetResource,
  type LedgerConfig,
  type LedgerCounters,
  type LedgerSnapshot,
  type LedgerState,
  type ScopeUsage,
} from './budget/ledger-state';
export {
  ledgerActorId,
  parseLedgerRoot,
  parseScopeId,
  SCOPE_ID_RULE,
  ScopeIdSchema,
  ScopeKind,
  type ParsedScopeId,
} from './budget/scope-id';
export {
  BUDGET_METRICS,
  budgetMetricSamples,
  registerBudgetMetrics,
  type BudgetMetricSample,
  type BudgetMetricsOptions,
} from './budget/budget-metrics';
export {
  actualAmount,
  ModelPricesSchema,
  worstCaseAmount,
  type ModelPrices,
} from './budget/model-call-cost';
export {
  createRateLimitActor,
  RATE_LIMIT_KIND,
  RateLimitActor,
  rateLimitActorId,
  type RateLimitActorOptions,
  type RateLimitDefinition,
} from './budget/rate-limit-actor';
export {
  RateLimitsSchema,
  type AcquireReply,
  type RateLimitsInput,
  type RateLimitStatus,
} from './budget/rate-limit-state';
export {
  RateLimiter,
  type AcquireOrWaitOptions,
  type RateLimiterOptions,
} from './budget/rate-limiter';
export { Coordinator, type CoordinatorDeps } from './coordinator';
export { ConfigSchema, type CoordinatorConfig, type CoordinatorOptions } from './config';
export {
  HostRegistry,
  HostState,
  type HostRecord,
  type HostRegistryOptions,
} from './host-registry';
export { ClusterPlacement, type ClusterPlacementOptions } from './cluster-placement';
export { DEFAULT_JOB_POLICY, FairQueue, type JobPolicy } from './fair-queue';
export { LeaderLease, type LeaderLeaseOptions } from './leader-lease';
export { remindAt, ReminderSchema, ReminderService, type Reminder } from './reminders';
export { MetricsServer, type MetricsSource } from './metrics';
