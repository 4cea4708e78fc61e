/** @packageDocumentation The `evolve` job driver: evolutionary program search over suites. */
export {
  createEvolveDriver,
  evolveJournalTaskId,
  type EvolveDriverOptions,
  type EvolveRun,
} from './evolve-driver';
export {
  DEFAULT_EVALUATOR_SLOTS,
  type EvolveJobConfig,
  EvolveJobConfigSchema,
  EvolveSearchOverridesSchema,
  type EvolveTask,
  type EvolveTaskInput,
  EvolveTaskInputSchema,
  EvolveTaskListSchema,
  EvolveTaskSchema,
} from './evolve-job-spec';
export { composeBudgetHooks } from './compose-budget-hooks';
export {
  createEvolveIslandActor,
  type EvolveBudgetContext,
  type EvolveIslandActorOptions,
  IslandEvaluationSchema,
} from './evolve-island-actor';
export { type EvolveReportInput, renderEvolveReport } from './evolve-report';
export {
  bestScore,
  type EvaluationPoint,
  type FitnessSeries,
  fitnessSeries,
  type GenerationPoint,
} from './fitness-series';
export { type GenerationProgress, ProgressJournal } from './progress-journal';
export {
  classifySandboxFailure,
  EVAL_DIR,
  programFileOf,
  runSandboxEvaluation,
  sandboxFailure,
  type SandboxEvaluationSetup,
} from './run-sandbox-evaluation';
export {
  type EvaluatorGrant,
  EvaluatorGrantSchema,
  type EvaluatorLeaseMessage,
  EvaluatorLeaseMessageSchema,
  serveEvaluatorLeases,
} from './evaluator-lease-service';
export {
  destroySandboxes,
  evaluatorSandboxId,
  evaluatorSandboxIds,
  type LeaseReport,
  MAX_SANDBOX_REPLACEMENTS,
  SandboxEvaluatorPool,
  type SandboxEvaluatorPoolOptions,
} from './sandbox-evaluator-pool';
export { openSearchBudgetScope, searchBudgetScope, searchLedgerRoot } from './search-budget-scope';
export { checkSuite, dryRunTask, type SuiteCheck } from './check-suite';
export {
  loadSuiteBundle,
  MAX_SUITE_BYTES,
  MAX_INLINE_SUITE_BYTES,
  checkSuiteFitsMessages,
  MAX_SUITE_TASK_FILE_BYTES,
  parseSuiteTaskFile,
  phaseFiles,
  resolveSuiteDir,
  type SuiteBundle,
} from './suite-bundle';
export {
  isMleCompetition,
  loadMleCompetition,
  type Medal,
  medalOf,
  MLE_CONFIG_FILE,
  type MleCompetitionConfig,
  MleCompetitionConfigSchema,
} from './mle-competition';
export { MLE_GRADER_HARNESS, MLE_HARNESS_VERSION } from './mle-grader-harness';
export {
  candidateFiles,
  graderSandboxId,
  phaseShipment,
  runSealedEvaluation,
  SEALED_DIR,
  type SealedEvaluationSetup,
} from './run-sealed-evaluation';
export { COMPETITIONS_DIR, expandCompetitionTasks, loadTaskBundle } from './competition-tasks';
