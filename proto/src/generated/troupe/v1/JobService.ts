// Original file: troupe/v1/jobs.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { ArtifactChunk as _troupe_v1_ArtifactChunk, ArtifactChunk__Output as _troupe_v1_ArtifactChunk__Output } from '../../troupe/v1/ArtifactChunk';
import type { BudgetUpdate as _troupe_v1_BudgetUpdate, BudgetUpdate__Output as _troupe_v1_BudgetUpdate__Output } from '../../troupe/v1/BudgetUpdate';
import type { CancelJobRequest as _troupe_v1_CancelJobRequest, CancelJobRequest__Output as _troupe_v1_CancelJobRequest__Output } from '../../troupe/v1/CancelJobRequest';
import type { CancelJobResponse as _troupe_v1_CancelJobResponse, CancelJobResponse__Output as _troupe_v1_CancelJobResponse__Output } from '../../troupe/v1/CancelJobResponse';
import type { DeleteJobRequest as _troupe_v1_DeleteJobRequest, DeleteJobRequest__Output as _troupe_v1_DeleteJobRequest__Output } from '../../troupe/v1/DeleteJobRequest';
import type { DeleteJobResponse as _troupe_v1_DeleteJobResponse, DeleteJobResponse__Output as _troupe_v1_DeleteJobResponse__Output } from '../../troupe/v1/DeleteJobResponse';
import type { GetArtifactRequest as _troupe_v1_GetArtifactRequest, GetArtifactRequest__Output as _troupe_v1_GetArtifactRequest__Output } from '../../troupe/v1/GetArtifactRequest';
import type { GetBudgetRequest as _troupe_v1_GetBudgetRequest, GetBudgetRequest__Output as _troupe_v1_GetBudgetRequest__Output } from '../../troupe/v1/GetBudgetRequest';
import type { GetBudgetResponse as _troupe_v1_GetBudgetResponse, GetBudgetResponse__Output as _troupe_v1_GetBudgetResponse__Output } from '../../troupe/v1/GetBudgetResponse';
import type { GetJobRequest as _troupe_v1_GetJobRequest, GetJobRequest__Output as _troupe_v1_GetJobRequest__Output } from '../../troupe/v1/GetJobRequest';
import type { GetResultsRequest as _troupe_v1_GetResultsRequest, GetResultsRequest__Output as _troupe_v1_GetResultsRequest__Output } from '../../troupe/v1/GetResultsRequest';
import type { GetRolloutsRequest as _troupe_v1_GetRolloutsRequest, GetRolloutsRequest__Output as _troupe_v1_GetRolloutsRequest__Output } from '../../troupe/v1/GetRolloutsRequest';
import type { Job as _troupe_v1_Job, Job__Output as _troupe_v1_Job__Output } from '../../troupe/v1/Job';
import type { JobEvent as _troupe_v1_JobEvent, JobEvent__Output as _troupe_v1_JobEvent__Output } from '../../troupe/v1/JobEvent';
import type { JobResults as _troupe_v1_JobResults, JobResults__Output as _troupe_v1_JobResults__Output } from '../../troupe/v1/JobResults';
import type { JobsUpdate as _troupe_v1_JobsUpdate, JobsUpdate__Output as _troupe_v1_JobsUpdate__Output } from '../../troupe/v1/JobsUpdate';
import type { ListJobsRequest as _troupe_v1_ListJobsRequest, ListJobsRequest__Output as _troupe_v1_ListJobsRequest__Output } from '../../troupe/v1/ListJobsRequest';
import type { ListJobsResponse as _troupe_v1_ListJobsResponse, ListJobsResponse__Output as _troupe_v1_ListJobsResponse__Output } from '../../troupe/v1/ListJobsResponse';
import type { RolloutRequest as _troupe_v1_RolloutRequest, RolloutRequest__Output as _troupe_v1_RolloutRequest__Output } from '../../troupe/v1/RolloutRequest';
import type { RolloutResponse as _troupe_v1_RolloutResponse, RolloutResponse__Output as _troupe_v1_RolloutResponse__Output } from '../../troupe/v1/RolloutResponse';
import type { SubmitJobRequest as _troupe_v1_SubmitJobRequest, SubmitJobRequest__Output as _troupe_v1_SubmitJobRequest__Output } from '../../troupe/v1/SubmitJobRequest';
import type { SubmitJobResponse as _troupe_v1_SubmitJobResponse, SubmitJobResponse__Output as _troupe_v1_SubmitJobResponse__Output } from '../../troupe/v1/SubmitJobResponse';
import type { TaskFileChunk as _troupe_v1_TaskFileChunk, TaskFileChunk__Output as _troupe_v1_TaskFileChunk__Output } from '../../troupe/v1/TaskFileChunk';
import type { TaskFileUpload as _troupe_v1_TaskFileUpload, TaskFileUpload__Output as _troupe_v1_TaskFileUpload__Output } from '../../troupe/v1/TaskFileUpload';
import type { WatchBudgetRequest as _troupe_v1_WatchBudgetRequest, WatchBudgetRequest__Output as _troupe_v1_WatchBudgetRequest__Output } from '../../troupe/v1/WatchBudgetRequest';
import type { WatchJobRequest as _troupe_v1_WatchJobRequest, WatchJobRequest__Output as _troupe_v1_WatchJobRequest__Output } from '../../troupe/v1/WatchJobRequest';
import type { WatchJobsRequest as _troupe_v1_WatchJobsRequest, WatchJobsRequest__Output as _troupe_v1_WatchJobsRequest__Output } from '../../troupe/v1/WatchJobsRequest';

/**
 * Submits, inspects, watches and cancels jobs. Served by the coordinator.
 */
export interface JobServiceClient extends grpc.Client {
  /**
   * Requests cancellation. Running tasks are aborted with reason "user"; the
   * job reaches CANCELLED asynchronously (watch for JOB_FINISHED). Cancelling a
   * finished job is not an error: the job is returned unchanged.
   */
  CancelJob(argument: _troupe_v1_CancelJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_CancelJobResponse__Output>): grpc.ClientUnaryCall;
  CancelJob(argument: _troupe_v1_CancelJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_CancelJobResponse__Output>): grpc.ClientUnaryCall;
  CancelJob(argument: _troupe_v1_CancelJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_CancelJobResponse__Output>): grpc.ClientUnaryCall;
  CancelJob(argument: _troupe_v1_CancelJobRequest, callback: grpc.requestCallback<_troupe_v1_CancelJobResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Requests cancellation. Running tasks are aborted with reason "user"; the
   * job reaches CANCELLED asynchronously (watch for JOB_FINISHED). Cancelling a
   * finished job is not an error: the job is returned unchanged.
   */
  cancelJob(argument: _troupe_v1_CancelJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_CancelJobResponse__Output>): grpc.ClientUnaryCall;
  cancelJob(argument: _troupe_v1_CancelJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_CancelJobResponse__Output>): grpc.ClientUnaryCall;
  cancelJob(argument: _troupe_v1_CancelJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_CancelJobResponse__Output>): grpc.ClientUnaryCall;
  cancelJob(argument: _troupe_v1_CancelJobRequest, callback: grpc.requestCallback<_troupe_v1_CancelJobResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Deletes a finished job and what it stored: its record, task records and
   * results, event log, artifacts (`jobs/<job_id>/`) and, once they sleep,
   * its actors. GetJob then answers NOT_FOUND, and WatchJobs streams drop it.
   * ABORTED (Troupe code BUSY, not retryable) while the job has not finished
   * (cancel it first);
   * NOT_FOUND when no job has that id. A coordinator with
   * `jobRetentionMs` set deletes finished jobs this way on its own.
   */
  DeleteJob(argument: _troupe_v1_DeleteJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_DeleteJobResponse__Output>): grpc.ClientUnaryCall;
  DeleteJob(argument: _troupe_v1_DeleteJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_DeleteJobResponse__Output>): grpc.ClientUnaryCall;
  DeleteJob(argument: _troupe_v1_DeleteJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_DeleteJobResponse__Output>): grpc.ClientUnaryCall;
  DeleteJob(argument: _troupe_v1_DeleteJobRequest, callback: grpc.requestCallback<_troupe_v1_DeleteJobResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Deletes a finished job and what it stored: its record, task records and
   * results, event log, artifacts (`jobs/<job_id>/`) and, once they sleep,
   * its actors. GetJob then answers NOT_FOUND, and WatchJobs streams drop it.
   * ABORTED (Troupe code BUSY, not retryable) while the job has not finished
   * (cancel it first);
   * NOT_FOUND when no job has that id. A coordinator with
   * `jobRetentionMs` set deletes finished jobs this way on its own.
   */
  deleteJob(argument: _troupe_v1_DeleteJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_DeleteJobResponse__Output>): grpc.ClientUnaryCall;
  deleteJob(argument: _troupe_v1_DeleteJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_DeleteJobResponse__Output>): grpc.ClientUnaryCall;
  deleteJob(argument: _troupe_v1_DeleteJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_DeleteJobResponse__Output>): grpc.ClientUnaryCall;
  deleteJob(argument: _troupe_v1_DeleteJobRequest, callback: grpc.requestCallback<_troupe_v1_DeleteJobResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Streams one artifact of a job from the object store, in order.
   */
  GetArtifact(argument: _troupe_v1_GetArtifactRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_ArtifactChunk__Output>;
  GetArtifact(argument: _troupe_v1_GetArtifactRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_ArtifactChunk__Output>;
  /**
   * Streams one artifact of a job from the object store, in order.
   */
  getArtifact(argument: _troupe_v1_GetArtifactRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_ArtifactChunk__Output>;
  getArtifact(argument: _troupe_v1_GetArtifactRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_ArtifactChunk__Output>;
  
  /**
   * The cluster's budget ledger: every scope (or the one named) with its
   * limits, spend and reserved amounts, and the reservations held open by
   * model calls in flight. NOT_FOUND when the named scope does not exist;
   * INVALID_ARGUMENT when `scope` is not a budget scope id.
   * A search's own ledger (root `job:<job_id>`, holding the search's
   * `agent:<job_id>/<search_id>` scopes) is listed with it: see
   * `BudgetScope.ledger`.
   */
  GetBudget(argument: _troupe_v1_GetBudgetRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_GetBudgetResponse__Output>): grpc.ClientUnaryCall;
  GetBudget(argument: _troupe_v1_GetBudgetRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_GetBudgetResponse__Output>): grpc.ClientUnaryCall;
  GetBudget(argument: _troupe_v1_GetBudgetRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_GetBudgetResponse__Output>): grpc.ClientUnaryCall;
  GetBudget(argument: _troupe_v1_GetBudgetRequest, callback: grpc.requestCallback<_troupe_v1_GetBudgetResponse__Output>): grpc.ClientUnaryCall;
  /**
   * The cluster's budget ledger: every scope (or the one named) with its
   * limits, spend and reserved amounts, and the reservations held open by
   * model calls in flight. NOT_FOUND when the named scope does not exist;
   * INVALID_ARGUMENT when `scope` is not a budget scope id.
   * A search's own ledger (root `job:<job_id>`, holding the search's
   * `agent:<job_id>/<search_id>` scopes) is listed with it: see
   * `BudgetScope.ledger`.
   */
  getBudget(argument: _troupe_v1_GetBudgetRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_GetBudgetResponse__Output>): grpc.ClientUnaryCall;
  getBudget(argument: _troupe_v1_GetBudgetRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_GetBudgetResponse__Output>): grpc.ClientUnaryCall;
  getBudget(argument: _troupe_v1_GetBudgetRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_GetBudgetResponse__Output>): grpc.ClientUnaryCall;
  getBudget(argument: _troupe_v1_GetBudgetRequest, callback: grpc.requestCallback<_troupe_v1_GetBudgetResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Returns one job. NOT_FOUND when no job has that id.
   */
  GetJob(argument: _troupe_v1_GetJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_Job__Output>): grpc.ClientUnaryCall;
  GetJob(argument: _troupe_v1_GetJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_Job__Output>): grpc.ClientUnaryCall;
  GetJob(argument: _troupe_v1_GetJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_Job__Output>): grpc.ClientUnaryCall;
  GetJob(argument: _troupe_v1_GetJobRequest, callback: grpc.requestCallback<_troupe_v1_Job__Output>): grpc.ClientUnaryCall;
  /**
   * Returns one job. NOT_FOUND when no job has that id.
   */
  getJob(argument: _troupe_v1_GetJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_Job__Output>): grpc.ClientUnaryCall;
  getJob(argument: _troupe_v1_GetJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_Job__Output>): grpc.ClientUnaryCall;
  getJob(argument: _troupe_v1_GetJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_Job__Output>): grpc.ClientUnaryCall;
  getJob(argument: _troupe_v1_GetJobRequest, callback: grpc.requestCallback<_troupe_v1_Job__Output>): grpc.ClientUnaryCall;
  
  /**
   * Returns per-task results and the aggregate. Available while the job runs
   * (tasks not finished yet have status TASK_PENDING or TASK_RUNNING). Tasks come
   * in plan order, a page at a time (`page_size`, `next_page_token`).
   */
  GetResults(argument: _troupe_v1_GetResultsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_JobResults__Output>): grpc.ClientUnaryCall;
  GetResults(argument: _troupe_v1_GetResultsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_JobResults__Output>): grpc.ClientUnaryCall;
  GetResults(argument: _troupe_v1_GetResultsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_JobResults__Output>): grpc.ClientUnaryCall;
  GetResults(argument: _troupe_v1_GetResultsRequest, callback: grpc.requestCallback<_troupe_v1_JobResults__Output>): grpc.ClientUnaryCall;
  /**
   * Returns per-task results and the aggregate. Available while the job runs
   * (tasks not finished yet have status TASK_PENDING or TASK_RUNNING). Tasks come
   * in plan order, a page at a time (`page_size`, `next_page_token`).
   */
  getResults(argument: _troupe_v1_GetResultsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_JobResults__Output>): grpc.ClientUnaryCall;
  getResults(argument: _troupe_v1_GetResultsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_JobResults__Output>): grpc.ClientUnaryCall;
  getResults(argument: _troupe_v1_GetResultsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_JobResults__Output>): grpc.ClientUnaryCall;
  getResults(argument: _troupe_v1_GetResultsRequest, callback: grpc.requestCallback<_troupe_v1_JobResults__Output>): grpc.ClientUnaryCall;
  
  /**
   * The rollouts of a `rollout` job so far (finished ones carry their
   * trajectory). NOT_FOUND when no job has that id; INVALID_ARGUMENT when the
   * job is of another kind.
   */
  GetRollouts(argument: _troupe_v1_GetRolloutsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_RolloutResponse__Output>): grpc.ClientUnaryCall;
  GetRollouts(argument: _troupe_v1_GetRolloutsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_RolloutResponse__Output>): grpc.ClientUnaryCall;
  GetRollouts(argument: _troupe_v1_GetRolloutsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_RolloutResponse__Output>): grpc.ClientUnaryCall;
  GetRollouts(argument: _troupe_v1_GetRolloutsRequest, callback: grpc.requestCallback<_troupe_v1_RolloutResponse__Output>): grpc.ClientUnaryCall;
  /**
   * The rollouts of a `rollout` job so far (finished ones carry their
   * trajectory). NOT_FOUND when no job has that id; INVALID_ARGUMENT when the
   * job is of another kind.
   */
  getRollouts(argument: _troupe_v1_GetRolloutsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_RolloutResponse__Output>): grpc.ClientUnaryCall;
  getRollouts(argument: _troupe_v1_GetRolloutsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_RolloutResponse__Output>): grpc.ClientUnaryCall;
  getRollouts(argument: _troupe_v1_GetRolloutsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_RolloutResponse__Output>): grpc.ClientUnaryCall;
  getRollouts(argument: _troupe_v1_GetRolloutsRequest, callback: grpc.requestCallback<_troupe_v1_RolloutResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Lists jobs, newest first, one page at a time.
   */
  ListJobs(argument: _troupe_v1_ListJobsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  ListJobs(argument: _troupe_v1_ListJobsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  ListJobs(argument: _troupe_v1_ListJobsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  ListJobs(argument: _troupe_v1_ListJobsRequest, callback: grpc.requestCallback<_troupe_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Lists jobs, newest first, one page at a time.
   */
  listJobs(argument: _troupe_v1_ListJobsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  listJobs(argument: _troupe_v1_ListJobsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  listJobs(argument: _troupe_v1_ListJobsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  listJobs(argument: _troupe_v1_ListJobsRequest, callback: grpc.requestCallback<_troupe_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * RL rollouts: runs `samples_per_task` agent episodes on each named task of
   * an issue-resolution suite against the caller's policy server (an
   * OpenAI-compatible endpoint), each graded by the task's hidden grader, as
   * one job of kind `rollout` (watchable, cancellable, resumable like any
   * job). Waits for the job to finish and returns every rollout with its
   * trajectory, reward and usage; with `no_wait` returns at once (then call
   * GetRollouts). The call's deadline bounds the wait: when it passes, the
   * job is cancelled. INVALID_ARGUMENT names the request field and the rule
   * (for example "request.sampling.temperature: must be <= 2").
   */
  Rollout(argument: _troupe_v1_RolloutRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_RolloutResponse__Output>): grpc.ClientUnaryCall;
  Rollout(argument: _troupe_v1_RolloutRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_RolloutResponse__Output>): grpc.ClientUnaryCall;
  Rollout(argument: _troupe_v1_RolloutRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_RolloutResponse__Output>): grpc.ClientUnaryCall;
  Rollout(argument: _troupe_v1_RolloutRequest, callback: grpc.requestCallback<_troupe_v1_RolloutResponse__Output>): grpc.ClientUnaryCall;
  /**
   * RL rollouts: runs `samples_per_task` agent episodes on each named task of
   * an issue-resolution suite against the caller's policy server (an
   * OpenAI-compatible endpoint), each graded by the task's hidden grader, as
   * one job of kind `rollout` (watchable, cancellable, resumable like any
   * job). Waits for the job to finish and returns every rollout with its
   * trajectory, reward and usage; with `no_wait` returns at once (then call
   * GetRollouts). The call's deadline bounds the wait: when it passes, the
   * job is cancelled. INVALID_ARGUMENT names the request field and the rule
   * (for example "request.sampling.temperature: must be <= 2").
   */
  rollout(argument: _troupe_v1_RolloutRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_RolloutResponse__Output>): grpc.ClientUnaryCall;
  rollout(argument: _troupe_v1_RolloutRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_RolloutResponse__Output>): grpc.ClientUnaryCall;
  rollout(argument: _troupe_v1_RolloutRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_RolloutResponse__Output>): grpc.ClientUnaryCall;
  rollout(argument: _troupe_v1_RolloutRequest, callback: grpc.requestCallback<_troupe_v1_RolloutResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Validates and persists a job spec and queues the job. With an
   * `idempotency_key` already used for a job, returns that job instead of
   * creating a new one. Fails with INVALID_ARGUMENT naming the field and the
   * rule broken when the spec is invalid.
   */
  SubmitJob(argument: _troupe_v1_SubmitJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_SubmitJobResponse__Output>): grpc.ClientUnaryCall;
  SubmitJob(argument: _troupe_v1_SubmitJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_SubmitJobResponse__Output>): grpc.ClientUnaryCall;
  SubmitJob(argument: _troupe_v1_SubmitJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_SubmitJobResponse__Output>): grpc.ClientUnaryCall;
  SubmitJob(argument: _troupe_v1_SubmitJobRequest, callback: grpc.requestCallback<_troupe_v1_SubmitJobResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Validates and persists a job spec and queues the job. With an
   * `idempotency_key` already used for a job, returns that job instead of
   * creating a new one. Fails with INVALID_ARGUMENT naming the field and the
   * rule broken when the spec is invalid.
   */
  submitJob(argument: _troupe_v1_SubmitJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_SubmitJobResponse__Output>): grpc.ClientUnaryCall;
  submitJob(argument: _troupe_v1_SubmitJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_SubmitJobResponse__Output>): grpc.ClientUnaryCall;
  submitJob(argument: _troupe_v1_SubmitJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_SubmitJobResponse__Output>): grpc.ClientUnaryCall;
  submitJob(argument: _troupe_v1_SubmitJobRequest, callback: grpc.requestCallback<_troupe_v1_SubmitJobResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Uploads a task file: JSONL text (UTF-8), one task a line, in chunks (the
   * first names the file). The coordinator keeps it in the cluster's object
   * store under its SHA-256 and returns the reference a job spec names in
   * `tasks: {file: <name>, upload: <reference>}`; the bytes are read and each
   * line checked when a job using it is submitted (errors name
   * `spec.tasks.file:<line>`). The same bytes uploaded again give the same
   * reference. INVALID_ARGUMENT naming `chunks` when the file is larger than
   * the server's limit (64 MiB) or not UTF-8, or `name` when it is empty or
   * longer than 256 characters.
   */
  UploadTaskFile(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_TaskFileUpload__Output>): grpc.ClientWritableStream<_troupe_v1_TaskFileChunk>;
  UploadTaskFile(metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_TaskFileUpload__Output>): grpc.ClientWritableStream<_troupe_v1_TaskFileChunk>;
  UploadTaskFile(options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_TaskFileUpload__Output>): grpc.ClientWritableStream<_troupe_v1_TaskFileChunk>;
  UploadTaskFile(callback: grpc.requestCallback<_troupe_v1_TaskFileUpload__Output>): grpc.ClientWritableStream<_troupe_v1_TaskFileChunk>;
  /**
   * Uploads a task file: JSONL text (UTF-8), one task a line, in chunks (the
   * first names the file). The coordinator keeps it in the cluster's object
   * store under its SHA-256 and returns the reference a job spec names in
   * `tasks: {file: <name>, upload: <reference>}`; the bytes are read and each
   * line checked when a job using it is submitted (errors name
   * `spec.tasks.file:<line>`). The same bytes uploaded again give the same
   * reference. INVALID_ARGUMENT naming `chunks` when the file is larger than
   * the server's limit (64 MiB) or not UTF-8, or `name` when it is empty or
   * longer than 256 characters.
   */
  uploadTaskFile(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_TaskFileUpload__Output>): grpc.ClientWritableStream<_troupe_v1_TaskFileChunk>;
  uploadTaskFile(metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_TaskFileUpload__Output>): grpc.ClientWritableStream<_troupe_v1_TaskFileChunk>;
  uploadTaskFile(options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_TaskFileUpload__Output>): grpc.ClientWritableStream<_troupe_v1_TaskFileChunk>;
  uploadTaskFile(callback: grpc.requestCallback<_troupe_v1_TaskFileUpload__Output>): grpc.ClientWritableStream<_troupe_v1_TaskFileChunk>;
  
  /**
   * Streams the budget: first a snapshot (what GetBudget returns for the same
   * `scope`), then an update each time a ledger commits a change: scopes whose
   * limits or totals changed, reservations opened and closed (settled,
   * released or expired), scopes removed. Driven by a watch of the ledgers'
   * persisted state, so it is served by every coordinator and adds no load on
   * the ledgers. NOT_FOUND / INVALID_ARGUMENT for `scope` as GetBudget. The
   * stream runs until the client cancels it or its deadline passes; a client
   * that reconnects gets a fresh snapshot.
   */
  WatchBudget(argument: _troupe_v1_WatchBudgetRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_BudgetUpdate__Output>;
  WatchBudget(argument: _troupe_v1_WatchBudgetRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_BudgetUpdate__Output>;
  /**
   * Streams the budget: first a snapshot (what GetBudget returns for the same
   * `scope`), then an update each time a ledger commits a change: scopes whose
   * limits or totals changed, reservations opened and closed (settled,
   * released or expired), scopes removed. Driven by a watch of the ledgers'
   * persisted state, so it is served by every coordinator and adds no load on
   * the ledgers. NOT_FOUND / INVALID_ARGUMENT for `scope` as GetBudget. The
   * stream runs until the client cancels it or its deadline passes; a client
   * that reconnects gets a fresh snapshot.
   */
  watchBudget(argument: _troupe_v1_WatchBudgetRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_BudgetUpdate__Output>;
  watchBudget(argument: _troupe_v1_WatchBudgetRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_BudgetUpdate__Output>;
  
  /**
   * Streams the job's event log from `from_sequence`, replaying past events
   * first and then following live ones. The stream ends after the
   * JOB_FINISHED event, or when the client cancels the call.
   */
  WatchJob(argument: _troupe_v1_WatchJobRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_JobEvent__Output>;
  WatchJob(argument: _troupe_v1_WatchJobRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_JobEvent__Output>;
  /**
   * Streams the job's event log from `from_sequence`, replaying past events
   * first and then following live ones. The stream ends after the
   * JOB_FINISHED event, or when the client cancels the call.
   */
  watchJob(argument: _troupe_v1_WatchJobRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_JobEvent__Output>;
  watchJob(argument: _troupe_v1_WatchJobRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_JobEvent__Output>;
  
  /**
   * Streams the job list: first a snapshot of the `limit` newest jobs that
   * match the filters (what ListJobs' first page returns), then an update each
   * time one of them changes, a newer matching job appears, or a job leaves
   * the view. Follows the jobs bucket, so it is served by every coordinator.
   * The stream runs until the client cancels it or its deadline passes; a
   * client that reconnects gets a fresh snapshot.
   */
  WatchJobs(argument: _troupe_v1_WatchJobsRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_JobsUpdate__Output>;
  WatchJobs(argument: _troupe_v1_WatchJobsRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_JobsUpdate__Output>;
  /**
   * Streams the job list: first a snapshot of the `limit` newest jobs that
   * match the filters (what ListJobs' first page returns), then an update each
   * time one of them changes, a newer matching job appears, or a job leaves
   * the view. Follows the jobs bucket, so it is served by every coordinator.
   * The stream runs until the client cancels it or its deadline passes; a
   * client that reconnects gets a fresh snapshot.
   */
  watchJobs(argument: _troupe_v1_WatchJobsRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_JobsUpdate__Output>;
  watchJobs(argument: _troupe_v1_WatchJobsRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_JobsUpdate__Output>;
  
}

/**
 * Submits, inspects, watches and cancels jobs. Served by the coordinator.
 */
export interface JobServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Requests cancellation. Running tasks are aborted with reason "user"; the
   * job reaches CANCELLED asynchronously (watch for JOB_FINISHED). Cancelling a
   * finished job is not an error: the job is returned unchanged.
   */
  CancelJob: grpc.handleUnaryCall<_troupe_v1_CancelJobRequest__Output, _troupe_v1_CancelJobResponse>;
  
  /**
   * Deletes a finished job and what it stored: its record, task records and
   * results, event log, artifacts (`jobs/<job_id>/`) and, once they sleep,
   * its actors. GetJob then answers NOT_FOUND, and WatchJobs streams drop it.
   * ABORTED (Troupe code BUSY, not retryable) while the job has not finished
   * (cancel it first);
   * NOT_FOUND when no job has that id. A coordinator with
   * `jobRetentionMs` set deletes finished jobs this way on its own.
   */
  DeleteJob: grpc.handleUnaryCall<_troupe_v1_DeleteJobRequest__Output, _troupe_v1_DeleteJobResponse>;
  
  /**
   * Streams one artifact of a job from the object store, in order.
   */
  GetArtifact: grpc.handleServerStreamingCall<_troupe_v1_GetArtifactRequest__Output, _troupe_v1_ArtifactChunk>;
  
  /**
   * The cluster's budget ledger: every scope (or the one named) with its
   * limits, spend and reserved amounts, and the reservations held open by
   * model calls in flight. NOT_FOUND when the named scope does not exist;
   * INVALID_ARGUMENT when `scope` is not a budget scope id.
   * A search's own ledger (root `job:<job_id>`, holding the search's
   * `agent:<job_id>/<search_id>` scopes) is listed with it: see
   * `BudgetScope.ledger`.
   */
  GetBudget: grpc.handleUnaryCall<_troupe_v1_GetBudgetRequest__Output, _troupe_v1_GetBudgetResponse>;
  
  /**
   * Returns one job. NOT_FOUND when no job has that id.
   */
  GetJob: grpc.handleUnaryCall<_troupe_v1_GetJobRequest__Output, _troupe_v1_Job>;
  
  /**
   * Returns per-task results and the aggregate. Available while the job runs
   * (tasks not finished yet have status TASK_PENDING or TASK_RUNNING). Tasks come
   * in plan order, a page at a time (`page_size`, `next_page_token`).
   */
  GetResults: grpc.handleUnaryCall<_troupe_v1_GetResultsRequest__Output, _troupe_v1_JobResults>;
  
  /**
   * The rollouts of a `rollout` job so far (finished ones carry their
   * trajectory). NOT_FOUND when no job has that id; INVALID_ARGUMENT when the
   * job is of another kind.
   */
  GetRollouts: grpc.handleUnaryCall<_troupe_v1_GetRolloutsRequest__Output, _troupe_v1_RolloutResponse>;
  
  /**
   * Lists jobs, newest first, one page at a time.
   */
  ListJobs: grpc.handleUnaryCall<_troupe_v1_ListJobsRequest__Output, _troupe_v1_ListJobsResponse>;
  
  /**
   * RL rollouts: runs `samples_per_task` agent episodes on each named task of
   * an issue-resolution suite against the caller's policy server (an
   * OpenAI-compatible endpoint), each graded by the task's hidden grader, as
   * one job of kind `rollout` (watchable, cancellable, resumable like any
   * job). Waits for the job to finish and returns every rollout with its
   * trajectory, reward and usage; with `no_wait` returns at once (then call
   * GetRollouts). The call's deadline bounds the wait: when it passes, the
   * job is cancelled. INVALID_ARGUMENT names the request field and the rule
   * (for example "request.sampling.temperature: must be <= 2").
   */
  Rollout: grpc.handleUnaryCall<_troupe_v1_RolloutRequest__Output, _troupe_v1_RolloutResponse>;
  
  /**
   * Validates and persists a job spec and queues the job. With an
   * `idempotency_key` already used for a job, returns that job instead of
   * creating a new one. Fails with INVALID_ARGUMENT naming the field and the
   * rule broken when the spec is invalid.
   */
  SubmitJob: grpc.handleUnaryCall<_troupe_v1_SubmitJobRequest__Output, _troupe_v1_SubmitJobResponse>;
  
  /**
   * Uploads a task file: JSONL text (UTF-8), one task a line, in chunks (the
   * first names the file). The coordinator keeps it in the cluster's object
   * store under its SHA-256 and returns the reference a job spec names in
   * `tasks: {file: <name>, upload: <reference>}`; the bytes are read and each
   * line checked when a job using it is submitted (errors name
   * `spec.tasks.file:<line>`). The same bytes uploaded again give the same
   * reference. INVALID_ARGUMENT naming `chunks` when the file is larger than
   * the server's limit (64 MiB) or not UTF-8, or `name` when it is empty or
   * longer than 256 characters.
   */
  UploadTaskFile: grpc.handleClientStreamingCall<_troupe_v1_TaskFileChunk__Output, _troupe_v1_TaskFileUpload>;
  
  /**
   * Streams the budget: first a snapshot (what GetBudget returns for the same
   * `scope`), then an update each time a ledger commits a change: scopes whose
   * limits or totals changed, reservations opened and closed (settled,
   * released or expired), scopes removed. Driven by a watch of the ledgers'
   * persisted state, so it is served by every coordinator and adds no load on
   * the ledgers. NOT_FOUND / INVALID_ARGUMENT for `scope` as GetBudget. The
   * stream runs until the client cancels it or its deadline passes; a client
   * that reconnects gets a fresh snapshot.
   */
  WatchBudget: grpc.handleServerStreamingCall<_troupe_v1_WatchBudgetRequest__Output, _troupe_v1_BudgetUpdate>;
  
  /**
   * Streams the job's event log from `from_sequence`, replaying past events
   * first and then following live ones. The stream ends after the
   * JOB_FINISHED event, or when the client cancels the call.
   */
  WatchJob: grpc.handleServerStreamingCall<_troupe_v1_WatchJobRequest__Output, _troupe_v1_JobEvent>;
  
  /**
   * Streams the job list: first a snapshot of the `limit` newest jobs that
   * match the filters (what ListJobs' first page returns), then an update each
   * time one of them changes, a newer matching job appears, or a job leaves
   * the view. Follows the jobs bucket, so it is served by every coordinator.
   * The stream runs until the client cancels it or its deadline passes; a
   * client that reconnects gets a fresh snapshot.
   */
  WatchJobs: grpc.handleServerStreamingCall<_troupe_v1_WatchJobsRequest__Output, _troupe_v1_JobsUpdate>;
  
}

export interface JobServiceDefinition extends grpc.ServiceDefinition {
  CancelJob: MethodDefinition<_troupe_v1_CancelJobRequest, _troupe_v1_CancelJobResponse, _troupe_v1_CancelJobRequest__Output, _troupe_v1_CancelJobResponse__Output>
  DeleteJob: MethodDefinition<_troupe_v1_DeleteJobRequest, _troupe_v1_DeleteJobResponse, _troupe_v1_DeleteJobRequest__Output, _troupe_v1_DeleteJobResponse__Output>
  GetArtifact: MethodDefinition<_troupe_v1_GetArtifactRequest, _troupe_v1_ArtifactChunk, _troupe_v1_GetArtifactRequest__Output, _troupe_v1_ArtifactChunk__Output>
  GetBudget: MethodDefinition<_troupe_v1_GetBudgetRequest, _troupe_v1_GetBudgetResponse, _troupe_v1_GetBudgetRequest__Output, _troupe_v1_GetBudgetResponse__Output>
  GetJob: MethodDefinition<_troupe_v1_GetJobRequest, _troupe_v1_Job, _troupe_v1_GetJobRequest__Output, _troupe_v1_Job__Output>
  GetResults: MethodDefinition<_troupe_v1_GetResultsRequest, _troupe_v1_JobResults, _troupe_v1_GetResultsRequest__Output, _troupe_v1_JobResults__Output>
  GetRollouts: MethodDefinition<_troupe_v1_GetRolloutsRequest, _troupe_v1_RolloutResponse, _troupe_v1_GetRolloutsRequest__Output, _troupe_v1_RolloutResponse__Output>
  ListJobs: MethodDefinition<_troupe_v1_ListJobsRequest, _troupe_v1_ListJobsResponse, _troupe_v1_ListJobsRequest__Output, _troupe_v1_ListJobsResponse__Output>
  Rollout: MethodDefinition<_troupe_v1_RolloutRequest, _troupe_v1_RolloutResponse, _troupe_v1_RolloutRequest__Output, _troupe_v1_RolloutResponse__Output>
  SubmitJob: MethodDefinition<_troupe_v1_SubmitJobRequest, _troupe_v1_SubmitJobResponse, _troupe_v1_SubmitJobRequest__Output, _troupe_v1_SubmitJobResponse__Output>
  UploadTaskFile: MethodDefinition<_troupe_v1_TaskFileChunk, _troupe_v1_TaskFileUpload, _troupe_v1_TaskFileChunk__Output, _troupe_v1_TaskFileUpload__Output>
  WatchBudget: MethodDefinition<_troupe_v1_WatchBudgetRequest, _troupe_v1_BudgetUpdate, _troupe_v1_WatchBudgetRequest__Output, _troupe_v1_BudgetUpdate__Output>
  WatchJob: MethodDefinition<_troupe_v1_WatchJobRequest, _troupe_v1_JobEvent, _troupe_v1_WatchJobRequest__Output, _troupe_v1_JobEvent__Output>
  WatchJobs: MethodDefinition<_troupe_v1_WatchJobsRequest, _troupe_v1_JobsUpdate, _troupe_v1_WatchJobsRequest__Output, _troupe_v1_JobsUpdate__Output>
}
