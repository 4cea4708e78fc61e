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
  ISSUE_SOLVER_INSTRUCTION,
  issueSessionId,
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
  loadIssueTask,
  MAX_TASK_BYTES,
  type IssueSuite,
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
  LoadedIssueTaskSchema,
  type InvalidIssueTask,
  type IssueResolutionConfig,
  type IssueSuiteRef,
  type IssueTaskFile,
  type IssueTaskInput,
  type LoadedIssueTask,
} from './issue-task-spec';
export { ResultStore, StoredTaskResultSchema, type StoredTaskResult } from './result-store';
export { packTar, type TarFileEntry } from './tar-pack';
export { applyFilePatch, parsePatch, type FilePatch, type PatchHunk } from './unified-patch';
export { WorkspaceSandbox, type WorkspaceExecResult } from './workspace-sandbox';
