// Original file: troupe/v1/jobs.proto

import type { JobState as _troupe_v1_JobState, JobState__Output as _troupe_v1_JobState__Output } from '../../troupe/v1/JobState';
import type { JobAggregate as _troupe_v1_JobAggregate, JobAggregate__Output as _troupe_v1_JobAggregate__Output } from '../../troupe/v1/JobAggregate';
import type { TaskResult as _troupe_v1_TaskResult, TaskResult__Output as _troupe_v1_TaskResult__Output } from '../../troupe/v1/TaskResult';

export interface JobResults {
  'jobId'?: (string);
  'state'?: (_troupe_v1_JobState);
  'aggregate'?: (_troupe_v1_JobAggregate | null);
  /**
   * This page's tasks, in plan order.
   */
  'tasks'?: (_troupe_v1_TaskResult)[];
  /**
   * Token of the next page; empty on the last.
   */
  'nextPageToken'?: (string);
}

export interface JobResults__Output {
  'jobId': (string);
  'state': (_troupe_v1_JobState__Output);
  'aggregate': (_troupe_v1_JobAggregate__Output | null);
  /**
   * This page's tasks, in plan order.
   */
  'tasks': (_troupe_v1_TaskResult__Output)[];
  /**
   * Token of the next page; empty on the last.
   */
  'nextPageToken': (string);
}
