// Original file: troupe/v1/jobs.proto

import type { Job as _troupe_v1_Job, Job__Output as _troupe_v1_Job__Output } from '../../troupe/v1/Job';

export interface CancelJobResponse {
  /**
   * The job after the request was recorded.
   */
  'job'?: (_troupe_v1_Job | null);
}

export interface CancelJobResponse__Output {
  /**
   * The job after the request was recorded.
   */
  'job': (_troupe_v1_Job__Output | null);
}
