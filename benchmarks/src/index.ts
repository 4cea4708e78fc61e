/** @packageDocumentation @troupe/benchmarks: Benchmark drivers and shipped task suites. */
export { registerBuiltinDrivers, type BuiltinDriverOptions } from './register-builtin-drivers';
export {
  createRolloutAgentRunner,
  createRolloutDriver,
  ROLLOUT_AGENT_KIND,
  ROLLOUT_UNAVAILABLE,
  rolloutConfigOf,
  type RolloutDriverOptions,
} from './rollout';
export {
  createShellTasksDriver,
  shellSandboxId,
  type ShellRun,
  type ShellTasksDriverOptions,
} from './shell-tasks/shell-tasks-driver';
export {
  DEFAULT_SHELL_IMAGE,
  ShellCommandSchema,
  ShellTaskGeneratorSchema,
  ShellTaskInputSchema,
  ShellTaskListSchema,
  ShellTaskSchema,
  ShellTasksConfigSchema,
  type ShellTask,
  type ShellTaskInput,
  type ShellTasksConfig,
} from './shell-tasks/shell-tasks-spec';
export {
  createEvolveDriver,
  evolveJournalTaskId,
  type EvolveDriverOptions,
} from './evolve/evolve-driver';
export { type EvolveBudgetContext } from './evolve/evolve-island-actor';
export {
  openSearchBudgetScope,
  searchBudgetScope,
  searchLedgerRoot,
} from './evolve/search-budget-scope';
export { checkSuite, dryRunTask, type SuiteCheck } from './evolve/check-suite';
export { expandCompetitionTasks, loadTaskBundle } from './evolve/competition-tasks';
export { type EvolveTask, EvolveTaskListSchema } from './evolve/evolve-job-spec';
export { MAX_SUITE_TASK_FILE_BYTES, parseSuiteTaskFile } from './evolve/suite-bundle';
export {
  TaskAgentKind,
  applyFilePatch,
  cancelsAgentSession,
  createGoldAgentRunner,
  createIssueResolutionDriver,
  createModelAgentRunner,
  jobMcp,
  createNoneAgentRunner,
  ISSUE_SOLVER_INSTRUCTION,
  issueSessionId,
  type ModelAgentRunnerOptions,
  GRADER_ENTRY,
  InvalidIssueTaskSchema,
  ISSUE_TASK_IMAGES,
  issueEvaluatorId,
  IssueResolutionConfigSchema,
  issueSandboxId,
  IssueSuiteRefSchema,
  IssueTaskFileSchema,
  IssueTaskInputSchema,
  IssueTaskLimitsSchema,
  IssueTaskTimeoutsSchema,
  loadIssueSuite,
  loadIssueTask,
  DEFAULT_MAX_TASK_MB,
  PayloadRefSchema,
  StagedIssueTaskSchema,
  stageIssueTask,
  scanTree,
  packTree,
  TreeEntryError,
  MODEL_AGENT_UNAVAILABLE,
  packTar,
  parsePatch,
  PINNED_GRADER_ENV,
  ResultStore,
  StoredTaskResultSchema,
  WorkspaceSandbox,
  type AgentConfig,
  type TaskAgentRunContext,
  type TaskAgentRunner,
  type TaskAgentRunResult,
  type TaskAgentStopReason,
  type TaskAgentUsage,
  type FilePatch,
  type InvalidIssueTask,
  type PayloadRef,
  type StagedIssueTask,
  type TreeScan,
  type IssueResolutionConfig,
  type IssueResolutionDriverOptions,
  type IssueRun,
  type IssueSuite,
  type IssueSuiteRef,
  type IssueTaskFile,
  type IssueTaskInput,
  type LoadedIssueTask,
  type PatchHunk,
  type StoredTaskResult,
  type TarFileEntry,
  type WorkspaceExecResult,
} from './issue-resolution';
export {
  createDesktopTasksDriver,
  desktopEnvironmentId,
  type DesktopRun,
  type DesktopTasksDriverOptions,
} from './desktop-tasks/desktop-tasks-driver';
export {
  goldAgent,
  modelAgent,
  noneAgent,
  type DesktopAgent,
  type DesktopAgentContext,
  type DesktopAgentResult,
  type LoggedStep,
  type DesktopBudgetContext,
  type DesktopModelAccess,
} from './desktop-tasks/desktop-agents';
export {
  DesktopTaskSchema,
  DesktopTasksConfigSchema,
  loadDesktopSuite,
  type DesktopTask,
  type DesktopTasksConfig,
} from './desktop-tasks/desktop-task-spec';
export {
  createRsiDriver,
  type RsiConfig,
  RsiConfigSchema,
  rsiBankId,
  type RsiDriverOptions,
  type RsiRun,
} from './rsi/rsi-driver';
export { renderRsiReport, type RsiReportInput } from './rsi/rsi-report';
export {
  DEFAULT_PHASE1_BRIEF,
  loadRsiSuite,
  type RsiSuite,
  RsiSuiteRefSchema,
  RsiSuiteSchema,
} from './rsi/rsi-suite';
export {
  type RsiPhase1Config,
  RsiPhase1ConfigSchema,
  type RsiPhase1Input,
  readPhase1Waves,
  runRsiPhase1,
} from './rsi/rsi-phase1';
export {
  parseRsiDesktopSuite,
  type RsiDesktopSuite,
  RsiDesktopSuiteSchema,
} from './rsi/rsi-desktop-suite';
export { desktopStudy, type DesktopStudyOptions, type RsiDesktopModels } from './rsi/rsi-desktop';
export { type RsiStudyEnvironment, shellStudy, type ShellStudyOptions } from './rsi/rsi-study';
export { runSetupSteps } from './desktop-tasks/desktop-setup';
export {
  collectSkillSequence,
  createSkillSequenceDriver,
  defaultLibraryId,
  sequenceSandboxId,
  type SkillSequenceDriverOptions,
  type SkillSequenceRun,
} from './skill-sequence/skill-sequence-driver';
export {
  goldSequenceAgent,
  modelSequenceAgent,
  noneSequenceAgent,
  SEQUENCE_SYSTEM_PROMPT,
  taskPrompt,
  type ActionObservation,
  type SequenceAgent,
  type SequenceAgentContext,
  type SequenceAgentResult,
  type SequenceBudgetContext,
  type SequenceModelAccess,
} from './skill-sequence/sequence-agents';
export {
  loadSequenceSuite,
  resolveSequenceImage,
  ScenarioInputSchema,
  ScenarioSchema,
  selectScenarios,
  SequenceSuiteFileSchema,
  SequenceTaskSchema,
  SkillSequenceConfigSchema,
  type Scenario,
  type ScenarioInput,
  type SequenceSuite,
  type SequenceSuiteFile,
  type SequenceTask,
  type SkillSequenceConfig,
} from './skill-sequence/skill-sequence-spec';
export { firstPythonBlock, truncateObservation } from './skill-sequence/code-action';
export { ScenarioJournal, type SequenceArm } from './skill-sequence/scenario-journal';
export {
  type SequenceArmRun,
  type SequenceTaskRun,
  SequenceTaskRunSchema,
} from './skill-sequence/sequence-task-run';
export {
  renderSkillSequenceReport,
  type SkillSequenceReportInput,
} from './skill-sequence/skill-sequence-report';
export type {
  ExtractSequenceFunctions,
  OpenSequenceLibrary,
  SequenceLibrary,
  SequenceSkill,
} from './skill-sequence/sequence-library';
export { chartTicks } from './chart-ticks';
export { escapeHtml } from './html-escape';
