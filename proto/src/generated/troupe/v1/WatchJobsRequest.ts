// Original file: troupe/v1/jobs.proto

import type { JobState as _troupe_v1_JobState, JobState__Output as _troupe_v1_JobState__Output } from '../../troupe/v1/JobState';

export interface WatchJobsRequest {
  /**
   * Only jobs in one of these states; empty means every state. A job of the
   * view that moves to another state leaves it (see `removed_job_ids`).
   */
  'states'?: (_troupe_v1_JobState)[];
  /**
   * Only jobs carrying every one of these labels with exactly these values.
   */
  'labelSelector'?: ({[key: string]: string});
  /**
   * Size of the view: the newest matching jobs it holds. 0 means the server
   * default (50); the server caps it (at 1000).
   */
  'limit'?: (number);
}

export interface WatchJobsRequest__Output {
  /**
   * Only jobs in one of these states; empty means every state. A job of the
   * view that moves to another state leaves it (see `removed_job_ids`).
   */
  'states': (_troupe_v1_JobState__Output)[];
  /**
   * Only jobs carrying every one of these labels with exactly these values.
   */
  'labelSelector': ({[key: string]: string});
  /**
   * Size of the view: the newest matching jobs it holds. 0 means the server
   * default (50); the server caps it (at 1000).
   */
  'limit': (number);
}
