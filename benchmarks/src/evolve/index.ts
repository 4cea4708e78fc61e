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
  destroySandboxes,
  EVAL_DIR,
  evaluatorSandboxId,
  evaluatorSandboxIds,
  MAX_SANDBOX_REPLACEMENTS,
  programFileOf,
  SandboxEvaluatorPool,
  type SandboxEvaluatorPoolOptions,
} from './sandbox-evaluator-pool';
export {
  loadSuiteBundle,
  MAX_SUITE_BYTES,
  phaseFiles,
  resolveSuiteDir,
  type SuiteBundle,
} from './suite-bundle';
