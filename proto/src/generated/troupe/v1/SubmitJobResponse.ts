// Original file: troupe/v1/jobs.proto

import type { Job as _troupe_v1_Job, Job__Output as _troupe_v1_Job__Output } from '../../troupe/v1/Job';

export interface SubmitJobResponse {
  /**
   * Id of the job created (or found, see `idempotency_key`).
   */
  'jobId'?: (string);
  /**
   * The job as persisted.
   */
  'job'?: (_troupe_v1_Job | null);
}

export interface SubmitJobResponse__Output {
  /**
   * Id of the job created (or found, see `idempotency_key`).
   */
  'jobId': (string);
  /**
   * The job as persisted.
   */
  'job': (_troupe_v1_Job__Output | null);
}
