// Original file: troupe/v1/jobs.proto

import type { ModelEndpoint as _troupe_v1_ModelEndpoint, ModelEndpoint__Output as _troupe_v1_ModelEndpoint__Output } from '../../troupe/v1/ModelEndpoint';
import type { SamplingParams as _troupe_v1_SamplingParams, SamplingParams__Output as _troupe_v1_SamplingParams__Output } from '../../troupe/v1/SamplingParams';
import type { Long } from '@grpc/proto-loader';

export interface RolloutRequest {
  /**
   * The policy server.
   */
  'endpoint'?: (_troupe_v1_ModelEndpoint | null);
  /**
   * Suite folder on the coordinator's host in the issue-resolution format
   * (task.yaml, repo/, hidden grader/), e.g. "benchmarks/suites/bugfix-mini".
   */
  'suite'?: (string);
  /**
   * Task ids of the suite to roll out; empty means every task.
   */
  'taskIds'?: (string)[];
  /**
   * Episodes per task (a GRPO group); 0 means 1. At most 64.
   */
  'samplesPerTask'?: (number);
  'sampling'?: (_troupe_v1_SamplingParams | null);
  /**
   * Model calls per episode; 0 means the task's own limit.
   */
  'maxSteps'?: (number);
  /**
   * Episodes running at once; 0 means 4.
   */
  'concurrency'?: (number);
  /**
   * Makes the submission idempotent, like SubmitJobRequest.idempotency_key.
   */
  'idempotencyKey'?: (string);
  /**
   * Return once the job is queued, without rollouts.
   */
  'noWait'?: (boolean);
  /**
   * Labels of the job.
   */
  'labels'?: ({[key: string]: string});
  /**
   * Wall time of one episode with its grading, ms; 0 means 600000.
   */
  'taskTimeoutMs'?: (number | string | Long);
}

export interface RolloutRequest__Output {
  /**
   * The policy server.
   */
  'endpoint': (_troupe_v1_ModelEndpoint__Output | null);
  /**
   * Suite folder on the coordinator's host in the issue-resolution format
   * (task.yaml, repo/, hidden grader/), e.g. "benchmarks/suites/bugfix-mini".
   */
  'suite': (string);
  /**
   * Task ids of the suite to roll out; empty means every task.
   */
  'taskIds': (string)[];
  /**
   * Episodes per task (a GRPO group); 0 means 1. At most 64.
   */
  'samplesPerTask': (number);
  'sampling': (_troupe_v1_SamplingParams__Output | null);
  /**
   * Model calls per episode; 0 means the task's own limit.
   */
  'maxSteps': (number);
  /**
   * Episodes running at once; 0 means 4.
   */
  'concurrency': (number);
  /**
   * Makes the submission idempotent, like SubmitJobRequest.idempotency_key.
   */
  'idempotencyKey': (string);
  /**
   * Return once the job is queued, without rollouts.
   */
  'noWait': (boolean);
  /**
   * Labels of the job.
   */
  'labels': ({[key: string]: string});
  /**
   * Wall time of one episode with its grading, ms; 0 means 600000.
   */
  'taskTimeoutMs': (number);
}
