/**
 * @packageDocumentation
 * `@troupe/node-agent`: the host side of Troupe. The `troupe-node-agent` process ({@link NodeAgent})
 * hosts the `sandbox` and `evaluator` actors, advertises their capacity to the coordinator and
 * keeps cluster artifacts in the object store ({@link ArtifactStore}). Underneath is the sandbox
 * layer those actors call: policy-checked sandbox specs, a Docker backend (and an unsafe process
 * backend for development), warm pools, an evaluator that grades in fresh containers, the reaper
 * that removes orphans, and the offline image manager.
 */
export {
  ArtifactNameSchema,
  ArtifactStore,
  type ArtifactInfo,
  type ArtifactPutOptions,
  type ArtifactSource,
  type ArtifactStoreOptions,
} from './artifact-store';
export {
  applyEnvironment,
  ConfigSchema,
  defaultHostId,
  hostIdOf,
  ENVIRONMENT_VARIABLES,
  WarmPoolEntrySchema,
  type NodeAgentConfig,
  type NodeAgentOptions,
} from './config';
export { followDockerEvents, type DockerEvent } from './docker-events';
export { NodeAgent, type NodeAgentDeps } from './node-agent';
export {
  createSandboxActor,
  isSandboxLost,
  sandboxRef,
  type PassivateFn,
  type SandboxActorDefinition,
  type SandboxActorOptions,
} from './sandbox-actor';
export {
  CommandSchema,
  CreateSandboxMessageSchema,
  EmptyMessageSchema,
  ExecMessageSchema,
  ExecReplySchema,
  ExportFilesMessageSchema,
  GetFilesMessageSchema,
  JobIdSchema,
  PutFilesMessageSchema,
  SANDBOX_KIND,
  SandboxActorStateSchema,
  SandboxActorStatus,
  SandboxMessages,
  SandboxSpecInputSchema,
  SnapshotMessageSchema,
  StartBackgroundMessageSchema,
  ReadOutputMessageSchema,
  WriteStdinMessageSchema,
  StoredSandboxSpecSchema,
  TaskMessageSchema,
  WaitMessageSchema,
  WireFileSchema,
  WireFilesSchema,
  type CreateSandboxMessage,
  type CreateSandboxReply,
  type DestroyReply,
  type ExecMessage,
  type ExecReply,
  type ExportFilesMessage,
  type ExportFilesReply,
  type GetFilesMessage,
  type GetFilesReply,
  type PutFilesMessage,
  type PutFilesReply,
  type SandboxActorState,
  type SandboxSpecInput,
  type SandboxStatusReply,
  type SnapshotReply,
  type StartBackgroundMessage,
  type StartBackgroundReply,
  type TaskStatusReply,
  type ReadOutputReply,
  type WireFile,
} from './sandbox-actor-messages';
export {
  createEvaluatorActor,
  evaluatorRef,
  type EvaluatorActorDefinition,
  type EvaluatorActorOptions,
} from './evaluator-actor';
export {
  EVALUATOR_KIND,
  EvaluatorActorStateSchema,
  EvaluatorMessages,
  GradeMessageSchema,
  type EvaluatorActorState,
  type GradeMessage,
  type GradeReply,
} from './evaluator-actor-messages';
export {
  defaultSlots,
  detectBackends,
  dockerAnswers,
  machineResources,
  type DetectBackendsOptions,
  type HostBackend,
  type HostResources,
  type KindSlots,
} from './host-capacity';
export { ImageResolver, type ImagePreparer, type ImageResolverOptions } from './image-resolver';
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
export { noopLogger, type Logger } from '@troupe/proto';
export {
  ProcessSandboxBackend,
  ProcessSandboxBackendConfigSchema,
  type ProcessSandboxBackendConfig,
  type ProcessSandboxBackendOptions,
} from './process-sandbox-backend';
export { readTar, type TarEntry } from './read-tar';
export { packStream, type AddTarEntry, type TarBodyStream, type TarHeader } from './tar-pack';
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
  ReadOutputOptions,
  TaskOutput,
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
export {
  DesktopEnvironmentBackend,
  DesktopEnvironmentBackendConfigSchema,
  type DesktopEnvironmentBackendConfig,
  type DesktopEnvironmentBackendOptions,
} from './desktop-environment-backend';
export {
  vmCapacity,
  VmEnvironmentBackend,
  VmEnvironmentBackendConfigSchema,
  type VmEnvironmentBackendConfig,
  type VmEnvironmentBackendOptions,
} from './vm-environment-backend';
export type { VmAccel } from './vm-accel';
export {
  type AccelDecision,
  bootProbe,
  decideAccel,
  type KvmProbeOutcome,
  probeAccel,
  type ProbeAccelOptions,
} from './vm-accel-probe';
export {
  VmReaper,
  VmReaperConfigSchema,
  type VmReaperConfig,
  type VmReaperOptions,
  type VmReapResult,
} from './vm-reaper';
export { startVmHost, VM_ACCEL_LABEL, VM_LABEL, type VmHost } from './vm-host';
export {
  GOLDEN_SNAPSHOT,
  type ActionResult,
  type CommandResult,
  type CreateEnvironmentOptions,
  type Environment,
  type EnvironmentBackend,
  type EnvironmentKind,
  type EnvironmentSnapshotInfo,
  type EnvironmentSpec,
  type LaunchOptions,
  type RunCommandOptions,
  type Screenshot,
  type WindowInfo,
  type WindowListing,
} from './environment';
export {
  ActionSchema,
  ActionType,
  agentActionOf,
  isTerminalAction,
  keysymOf,
  parseAction,
  type Action,
  type ParsedAction,
  type ScreenSize,
} from './environment-actions';
export {
  createEnvironmentActor,
  environmentRef,
  type EnvironmentActorDefinition,
  type EnvironmentActorOptions,
} from './environment-actor';
export {
  ENVIRONMENT_KIND,
  EnvironmentActorStateSchema,
  EnvironmentMessages,
  EnvironmentSpecInputSchema,
  type ActReply,
  type EnvironmentActorState,
  type EnvironmentSpecInput,
  type EnvironmentStatusReply,
  type GetFileReply,
  type LaunchReply,
  type ScreenshotReply,
  type WindowsReply,
} from './environment-actor-messages';
