/**
 * @packageDocumentation
 * `@troupe/proto`: the wire contracts of Troupe — subject, stream and bucket names, NATS header
 * names, the error model and its one wire codec (NATS headers, gRPC status), and the gRPC job API
 * (`troupe/v1/jobs.proto`) with its generated types.
 */

export {
  delay,
  type DelayOptions,
  type LinkedSignal,
  linkSignals,
  raceSignal,
  retryWithBackoff,
  type RetryWithBackoffOptions,
  throwIfAborted,
} from './abort';
export {
  cancelledError,
  CancelReason,
  ErrorCode,
  errorCode,
  ErrorReason,
  type FieldIssue,
  fromAbortSignal,
  fromZodError,
  hasErrorCode,
  hasReason,
  invalidArgument,
  isBudgetExhausted,
  isBusy,
  isCancelled,
  isErrorCode,
  isErrorReason,
  isInvalidArgument,
  isNotFound,
  isRetryable,
  isTimeout,
  isTroupeError,
  isUnavailable,
  MAX_LISTED_ISSUES,
  parseWith,
  someCause,
  timeoutError,
  toTroupeError,
  TroupeError,
  type TroupeErrorJson,
  type TroupeErrorOptions,
  type ZodErrorOptions,
} from './errors';
export { Header } from './headers';
export {
  parseUntrustedText,
  type ParseUntrustedTextOptions,
  UntrustedTextLimits,
} from './untrusted-text';
export {
  closeUntrustedTextWorkers,
  parseUntrustedTextAsync,
  type ParseUntrustedTextAsyncOptions,
  readUntrustedTextFile,
  UntrustedTextWorkerLimits,
} from './untrusted-text-async';
export {
  checkNatsAuth,
  ClusterNameSchema,
  DEFAULT_NATS_SERVER,
  NATS_RECONNECT_OPTIONS,
  NATS_RECONNECT_WAIT_MS,
  type NatsConnectionConfig,
  natsConnectionOptions,
  NatsConnectionSchema,
} from './nats-config';
export { type Logger, noopLogger } from './logger';
export { COMMON_ENVIRONMENT_VARIABLES, EnvironmentOverrides } from './environment-overrides';
export {
  type ApplyEnvironment,
  loadServerConfig,
  type LoadServerConfigOptions,
  parseServerArgs,
  serverConfigProblems,
} from './server-config';
export {
  runServer,
  type RunningServer,
  type RunServerOptions,
  type ServerLogger,
} from './run-server';
export { serverMain, type ServerMainOptions, type ServerProcess } from './server-main';
export {
  decodeErrorHeaders,
  encodeErrorHeaders,
  fromGrpcError,
  GrpcErrorMetadataKey,
  type GrpcServiceError,
  grpcStatusFor,
  toGrpcServiceError,
} from './wire-error-codec';
export {
  type ActorAddress,
  actorSubject,
  actorSubjectFilter,
  actorSubjectPrefix,
  CoordService,
  coordSubject,
  coordSubjectFilter,
  deadLetterStreamName,
  deadLetterSubject,
  deadLetterSubjectFilter,
  directoryKey,
  eventsStreamName,
  eventsSubject,
  eventsSubjectFilter,
  formatAddress,
  hostSubject,
  hostSubjectFilter,
  HostVerb,
  inboxStreamName,
  inboxSubject,
  inboxSubjectFilter,
  LEASE_SUBJECT_PATTERN,
  LEASE_SUBJECT_RULE,
  leaseSubject,
  NATS_INBOX_PREFIX,
  KvBucket,
  kvBucketName,
  NamePattern,
  NameRule,
  isHttpUrlWithoutCredentials,
  objectStoreName,
  bankObjectStoreName,
  parseActorKey,
  parseActorSubject,
  parseAddress,
  parseEventsSubject,
  parseInboxSubject,
  stateKey,
  stateKindFilter,
  trajectoryStreamName,
  trajectorySubject,
  trajectorySubjectFilter,
  validateActorId,
  validateActorKind,
  validateAddress,
  validateClusterName,
  validateHostId,
  validateJobId,
} from './names';
export {
  JOB_API_LOADER_OPTIONS,
  JOB_API_PROTO_FILE,
  type JobApi,
  jobApiIncludeDir,
  loadJobApi,
} from './job-api';

// Generated job API types (proto-loader-gen-types). `X` is what you send (permissive: optional
// fields, 64-bit integers as number | string | Long), `X__Output` what you receive (defaults
// filled in, 64-bit integers as number, enums as their names).
export type { ProtoGrpcType } from './generated/jobs';
export type {
  JobServiceClient,
  JobServiceDefinition,
  JobServiceHandlers,
} from './generated/troupe/v1/JobService';
export type {
  NodeServiceClient,
  NodeServiceDefinition,
  NodeServiceHandlers,
} from './generated/troupe/v1/NodeService';
export type { ArtifactChunk, ArtifactChunk__Output } from './generated/troupe/v1/ArtifactChunk';
export type { TaskFileChunk, TaskFileChunk__Output } from './generated/troupe/v1/TaskFileChunk';
export type { TaskFileUpload, TaskFileUpload__Output } from './generated/troupe/v1/TaskFileUpload';
export type {
  CancelJobRequest,
  CancelJobRequest__Output,
} from './generated/troupe/v1/CancelJobRequest';
export type {
  CancelJobResponse,
  CancelJobResponse__Output,
} from './generated/troupe/v1/CancelJobResponse';
export type {
  DeleteJobRequest,
  DeleteJobRequest__Output,
} from './generated/troupe/v1/DeleteJobRequest';
export type {
  DeleteJobResponse,
  DeleteJobResponse__Output,
} from './generated/troupe/v1/DeleteJobResponse';
export type {
  DrainNodeRequest,
  DrainNodeRequest__Output,
} from './generated/troupe/v1/DrainNodeRequest';
export type {
  DrainNodeResponse,
  DrainNodeResponse__Output,
} from './generated/troupe/v1/DrainNodeResponse';
export type {
  GetArtifactRequest,
  GetArtifactRequest__Output,
} from './generated/troupe/v1/GetArtifactRequest';
export type { GetJobRequest, GetJobRequest__Output } from './generated/troupe/v1/GetJobRequest';
export type { BudgetLimits, BudgetLimits__Output } from './generated/troupe/v1/BudgetLimits';
export type {
  BudgetReservation,
  BudgetReservation__Output,
} from './generated/troupe/v1/BudgetReservation';
export type { BudgetScope, BudgetScope__Output } from './generated/troupe/v1/BudgetScope';
export type { BudgetTotals, BudgetTotals__Output } from './generated/troupe/v1/BudgetTotals';
export type {
  GetBudgetRequest,
  GetBudgetRequest__Output,
} from './generated/troupe/v1/GetBudgetRequest';
export type {
  GetBudgetResponse,
  GetBudgetResponse__Output,
} from './generated/troupe/v1/GetBudgetResponse';
export type {
  GetResultsRequest,
  GetResultsRequest__Output,
} from './generated/troupe/v1/GetResultsRequest';
export type { Job, Job__Output } from './generated/troupe/v1/Job';
export type { JobAggregate, JobAggregate__Output } from './generated/troupe/v1/JobAggregate';
export type { JobEvent, JobEvent__Output } from './generated/troupe/v1/JobEvent';
export type { JobProgress, JobProgress__Output } from './generated/troupe/v1/JobProgress';
export type { JobResults, JobResults__Output } from './generated/troupe/v1/JobResults';
export type {
  ListJobsRequest,
  ListJobsRequest__Output,
} from './generated/troupe/v1/ListJobsRequest';
export type {
  ListJobsResponse,
  ListJobsResponse__Output,
} from './generated/troupe/v1/ListJobsResponse';
export type {
  ListNodesRequest,
  ListNodesRequest__Output,
} from './generated/troupe/v1/ListNodesRequest';
export type {
  ListNodesResponse,
  ListNodesResponse__Output,
} from './generated/troupe/v1/ListNodesResponse';
export type { Node, Node__Output } from './generated/troupe/v1/Node';
export type { JobsUpdate, JobsUpdate__Output } from './generated/troupe/v1/JobsUpdate';
export type { BudgetUpdate, BudgetUpdate__Output } from './generated/troupe/v1/BudgetUpdate';
export type { BudgetScopeRef, BudgetScopeRef__Output } from './generated/troupe/v1/BudgetScopeRef';
export type {
  BudgetReservationRef,
  BudgetReservationRef__Output,
} from './generated/troupe/v1/BudgetReservationRef';
export type {
  WatchBudgetRequest,
  WatchBudgetRequest__Output,
} from './generated/troupe/v1/WatchBudgetRequest';
export type { NodesUpdate, NodesUpdate__Output } from './generated/troupe/v1/NodesUpdate';
export type {
  WatchJobsRequest,
  WatchJobsRequest__Output,
} from './generated/troupe/v1/WatchJobsRequest';
export type {
  WatchNodesRequest,
  WatchNodesRequest__Output,
} from './generated/troupe/v1/WatchNodesRequest';
export type {
  SubmitJobRequest,
  SubmitJobRequest__Output,
} from './generated/troupe/v1/SubmitJobRequest';
export type {
  SubmitJobResponse,
  SubmitJobResponse__Output,
} from './generated/troupe/v1/SubmitJobResponse';
export type { TaskResult, TaskResult__Output } from './generated/troupe/v1/TaskResult';
export type {
  GetRolloutsRequest,
  GetRolloutsRequest__Output,
} from './generated/troupe/v1/GetRolloutsRequest';
export type { ModelEndpoint, ModelEndpoint__Output } from './generated/troupe/v1/ModelEndpoint';
export type { RolloutRequest, RolloutRequest__Output } from './generated/troupe/v1/RolloutRequest';
export type {
  RolloutResponse,
  RolloutResponse__Output,
} from './generated/troupe/v1/RolloutResponse';
export type { RolloutResult, RolloutResult__Output } from './generated/troupe/v1/RolloutResult';
export type { RolloutUsage, RolloutUsage__Output } from './generated/troupe/v1/RolloutUsage';
export type { SamplingParams, SamplingParams__Output } from './generated/troupe/v1/SamplingParams';
export type {
  WatchJobRequest,
  WatchJobRequest__Output,
} from './generated/troupe/v1/WatchJobRequest';
export { JobEventType, type JobEventType__Output } from './generated/troupe/v1/JobEventType';
export { JobState, type JobState__Output } from './generated/troupe/v1/JobState';
export { NodeState, type NodeState__Output } from './generated/troupe/v1/NodeState';
export { SpecFormat, type SpecFormat__Output } from './generated/troupe/v1/SpecFormat';
export { TaskStatus, type TaskStatus__Output } from './generated/troupe/v1/TaskStatus';
