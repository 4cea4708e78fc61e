// Original file: troupe/v1/jobs.proto

import type { JobState as _troupe_v1_JobState, JobState__Output as _troupe_v1_JobState__Output } from '../../troupe/v1/JobState';
import type { JobAggregate as _troupe_v1_JobAggregate, JobAggregate__Output as _troupe_v1_JobAggregate__Output } from '../../troupe/v1/JobAggregate';
import type { RolloutResult as _troupe_v1_RolloutResult, RolloutResult__Output as _troupe_v1_RolloutResult__Output } from '../../troupe/v1/RolloutResult';

export interface RolloutResponse {
  'jobId'?: (string);
  'state'?: (_troupe_v1_JobState);
  'aggregate'?: (_troupe_v1_JobAggregate | null);
  /**
   * In plan order: tasks sorted by id, samples in order.
   */
  'rollouts'?: (_troupe_v1_RolloutResult)[];
}

export interface RolloutResponse__Output {
  'jobId': (string);
  'state': (_troupe_v1_JobState__Output);
  'aggregate': (_troupe_v1_JobAggregate__Output | null);
  /**
   * In plan order: tasks sorted by id, samples in order.
   */
  'rollouts': (_troupe_v1_RolloutResult__Output)[];
}
