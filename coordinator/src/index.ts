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
  LedgerBudgetHook,
  type LedgerBudgetHookOptions,
  type LedgerReserveContext,
} from './budget/ledger-budget-hook';
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
export { LedgerStateFeed, type LedgerStates } from './budget/ledger-state-feed';
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
export {
  applyEnvironment,
  ConfigSchema,
  ENVIRONMENT_VARIABLES,
  type CoordinatorConfig,
  type CoordinatorOptions,
} from './config';
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
export { DriverRegistry } from './jobs/driver-registry';
export {
  type AnyJobDriver,
  type CollectedTask,
  type DriverActorRuntime,
  isInfrastructureFailure,
  type JobDriver,
  type PlanContext,
  type PlannedTask,
  type TaskArtifacts,
  type TaskContext,
  type TaskGrade,
  checkTaskCount,
  MAX_INLINE_TASKS,
  MAX_TASKS_PER_JOB,
  TASK_ID_PATTERN,
  TASK_ID_RULE,
  type TaskFileSupport,
  type TaskFileTask,
  type TaskProgress,
} from './jobs/job-driver';
export {
  isTaskFileRef,
  MAX_TASK_FILE_BYTES,
  MAX_TASK_LINE_BYTES,
  readTaskFile,
  TASK_FILE_UPLOAD_PATTERN,
  type TaskFileRef,
  TaskFileRefSchema,
} from './jobs/task-file';
export {
  AgentConfigSchema,
  checkSpecSize,
  DEFAULT_MAX_SPEC_BYTES,
  JOB_NAME_PATTERN,
  JobBudgetSchema,
  jobDisplayName,
  JobSpecSchema,
  MAX_JOB_CONCURRENCY,
  MAX_SPEC_ALIASES,
  MAX_SPEC_DEPTH,
  maxSpecBytesFor,
  parseJobSpec,
  parseSpecText,
  parseSpecTextAsync,
  RetryPolicySchema,
  SpecTextFormat,
  type JobSpec,
  type JobSpecInput,
} from './jobs/job-spec';
export {
  JobEventRecordSchema,
  type JobEventDraft,
  type JobEventKind,
  type JobEventRecord,
} from './jobs/job-event';
export {
  batchEvents,
  JobEventLog,
  type JobEventLogOptions,
  MAX_EVENT_MESSAGE_BYTES,
  MAX_EVENTS_PER_MESSAGE,
  type ReadEventsOptions,
} from './jobs/job-event-log';
export {
  countTasks,
  emptyJobState,
  isFinalPhase,
  isFinalTaskPhase,
  JobPhase,
  JobStateSchema,
  JobTransitions,
  listWork,
  MAX_STOP_EVENTS,
  planWork,
  positionsOf,
  retryDelayMs,
  TaskOutcomeSchema,
  TaskPhase,
  TaskRecordSchema,
  taskView,
  type JobEffects,
  type JobState,
  type JobWork,
  type TaskCounts,
  type TaskEntry,
  type TaskOutcome,
  type TaskRecord,
  type WorkList,
} from './jobs/job-state';
export {
  aggregateOf,
  JOB_DECIDED_EXECUTION,
  JobAggregateRecordSchema,
  JobRecordSchema,
  recordOf,
  TaskResultRecordSchema,
  type JobAggregateRecord,
  type JobRecord,
  type TaskResultRecord,
} from './jobs/job-record';
export {
  jobArtifactPrefix,
  jobPayloadPrefix,
  JOB_STORE_TIMEOUT_MS,
  JobStore,
  type ListedJob,
  planObjectName,
  type JobStoreOptions,
} from './jobs/job-store';
export {
  attemptResourceId,
  JOB_ACTOR_KIND,
  TASK_ACTOR_KIND,
  taskActorId,
} from './jobs/job-runtime';
export { createJobActor, JobActorMessages, type JobActorOptions } from './jobs/job-actor';
export {
  createTaskActor,
  START_REPORT_DELAY_MS,
  TaskActorMessages,
  type TaskActorOptions,
} from './jobs/task-actor';
export {
  JobManager,
  newJobId,
  type ArtifactReader,
  type JobManagerOptions,
  type JobManagerStartOptions,
  type JobResultsView,
  type ListJobsOptions,
  type ResultsOptions,
  type SubmitJobOptions,
  type TaskResultView,
  type WireTaskStatus,
} from './jobs/job-manager';
export {
  DEFAULT_GRPC_PORT,
  DEFAULT_MAX_MESSAGE_BYTES,
  GrpcConfigSchema,
  MIN_TOKEN_CHARS,
  type GrpcConfig,
  type GrpcOptions,
} from './jobs/grpc-config';
export { BearerAuth } from './jobs/bearer-auth';
export { JobApiServer, type JobApiServerOptions, type NodeSource } from './jobs/job-api-server';
export {
  toWireAggregate,
  toWireEvent,
  toWireJob,
  toWireNode,
  toWireResults,
} from './jobs/job-wire';
export {
  MAX_ROLLOUT_TOKENS,
  MAX_SAMPLES_PER_TASK,
  parseRolloutTaskId,
  ROLLOUT_JOB_KIND,
  type RolloutConfig,
  RolloutConfigSchema,
  rolloutJobSpec,
  rolloutTaskId,
} from './jobs/rollout-spec';
export { RolloutService, type RolloutServiceOptions } from './jobs/rollout-service';
