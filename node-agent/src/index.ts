/**
 * @packageDocumentation
 * `@troupe/node-agent`: the host side of Troupe. This part is the sandbox layer the sandbox,
 * evaluator and VM actors call: policy-checked sandbox specs, a Docker backend (and an unsafe
 * process backend for development), warm pools, an evaluator that grades in fresh containers, the
 * reaper that removes orphans, and the offline image manager.
 */
export {
  DockerSandboxBackend,
  DockerSandboxBackendConfigSchema,
  type DockerSandboxBackendConfig,
  type DockerSandboxBackendOptions,
} from './docker-sandbox-backend';
export {
  Evaluator,
  EvaluatorConfigSchema,
  GRADER_DIR,
  GRADER_OUT_DIR,
  GRADER_REPORT_FILE,
  type EvaluatorConfig,
  type EvaluatorOptions,
  type GradeRequest,
  type GradeResult,
  type GradeStatus,
  type TarSource,
} from './evaluator';
export {
  DEFAULT_BUILD_SCRIPT,
  ImageManager,
  type EnsuredImage,
  type EnsureImageOptions,
  type ImageManagerOptions,
} from './image-manager';
export { managedLabelFilters, TroupeLabel, type SandboxLabels } from './labels';
export { noopLogger, type Logger } from './logger';
export {
  ProcessSandboxBackend,
  ProcessSandboxBackendConfigSchema,
  type ProcessSandboxBackendConfig,
  type ProcessSandboxBackendOptions,
} from './process-sandbox-backend';
export { readTar, type TarEntry } from './read-tar';
export {
  Reaper,
  ReaperConfigSchema,
  type ReapResult,
  type ReaperConfig,
  type ReaperOptions,
} from './reaper';
export type {
  BackgroundExecOptions,
  BackgroundTaskState,
  BackgroundTaskStatus,
  Command,
  ExecOptions,
  ExecResult,
  FileEntry,
  FileSource,
  PutFilesOptions,
  Sandbox,
  SandboxMetadata,
  SandboxSnapshot,
  SandboxStatus,
  WaitOptions,
} from './sandbox';
export type { CreateSandboxOptions, ForkSandboxOptions, SandboxBackend } from './sandbox-backend';
export {
  isSecretLikeEnvKey,
  parseSandboxSpec,
  policyExceptionsOf,
  SandboxLabelsSchema,
  SandboxSpecSchema,
  userIds,
  type SandboxSpec,
  type SandboxSpecOptions,
} from './sandbox-spec';
export {
  POOL_ACTOR,
  WarmPool,
  WarmPoolConfigSchema,
  type WarmPoolConfig,
  type WarmPoolOptions,
} from './warm-pool';
