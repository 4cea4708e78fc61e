/** @packageDocumentation The `issue-resolution` job driver: fix-this-issue tasks graded by hidden tests. */
export {
  type TaskAgentRunContext,
  type TaskAgentRunner,
  type TaskAgentRunResult,
  type TaskAgentStopReason,
  type TaskAgentUsage,
} from './task-agent-runner';
export { type AgentConfig } from './agent-config';
export { createGoldAgentRunner } from './gold-agent-runner';
export {
  cancelsAgentSession,
  createModelAgentRunner,
  jobMcp,
  ISSUE_SOLVER_INSTRUCTION,
  ISSUE_SOLVER_TOOLS,
  issueSessionId,
  runTaskAgentSession,
  type ModelAgentRunnerOptions,
} from './model-agent-runner';
export { createNoneAgentRunner } from './none-agent-runner';
export {
  createIssueResolutionDriver,
  issueEvaluatorId,
  issueSandboxId,
  MODEL_AGENT_UNAVAILABLE,
  PINNED_GRADER_ENV,
  type IssueResolutionDriverOptions,
  type IssueRun,
} from './issue-resolution-driver';
export {
  GRADER_ENTRY,
  loadIssueSuite,
  DEFAULT_MAX_TASK_MB,
  loadIssueTask,
  type IssueSuite,
  type LoadIssueTaskOptions,
} from './issue-suite';
export {
  TaskAgentKind,
  InvalidIssueTaskSchema,
  ISSUE_TASK_IMAGES,
  IssueResolutionConfigSchema,
  IssueSuiteRefSchema,
  IssueTaskFileSchema,
  IssueTaskInputSchema,
  IssueTaskLimitsSchema,
  IssueTaskTimeoutsSchema,
  PayloadRefSchema,
  StagedIssueTaskSchema,
  type InvalidIssueTask,
  type IssueResolutionConfig,
  type IssueSuiteRef,
  type IssueTaskFile,
  type IssueTaskInput,
  type LoadedIssueTask,
  type PayloadRef,
  type StagedIssueTask,
} from './issue-task-spec';
export {
  ResultStore,
  type ResultStoreOptions,
  resultsNamespace,
  StoredTaskResultSchema,
  type StoredTaskResult,
} from './result-store';
export { packTar, type TarFileEntry } from './tar-pack';
export { ensureStaged, readPayloadText, stageIssueTask } from './task-payload';
export { packTree, scanTree, TreeEntryError, type TreeEntry, type TreeScan } from './task-tree';
export { applyFilePatch, parsePatch, type FilePatch, type PatchHunk } from './unified-patch';
export { WorkspaceSandbox, type WorkspaceExecResult } from './workspace-sandbox';
export {
  pruneSweBenchCache,
  SWE_BENCH_CACHE_DIR,
  SWE_BENCH_CACHE_MAX_AGE_MS,
} from './swe-bench-cache';
export {
  initWorkspaceRepo,
  takeWorkspacePatch,
  WORKSPACE_BASE_MARKER,
  WorkspaceRepoState,
  type WorkspacePatch,
} from './workspace-repo';
