// Original file: troupe/v1/jobs.proto

import type { SpecFormat as _troupe_v1_SpecFormat, SpecFormat__Output as _troupe_v1_SpecFormat__Output } from '../../troupe/v1/SpecFormat';

export interface SubmitJobRequest {
  /**
   * The job spec document, YAML or JSON text (UTF-8).
   */
  'spec'?: (string);
  /**
   * How `spec` is encoded.
   */
  'specFormat'?: (_troupe_v1_SpecFormat);
  /**
   * Client-chosen key (at most 128 characters) that makes the submission
   * idempotent: a retry with the same key returns the job created first.
   * Empty means no deduplication.
   */
  'idempotencyKey'?: (string);
  /**
   * Resume this earlier job: tasks that already finished keep their results
   * and only the others run again. Empty means a new job.
   */
  'resumeJobId'?: (string);
}

export interface SubmitJobRequest__Output {
  /**
   * The job spec document, YAML or JSON text (UTF-8).
   */
  'spec': (string);
  /**
   * How `spec` is encoded.
   */
  'specFormat': (_troupe_v1_SpecFormat__Output);
  /**
   * Client-chosen key (at most 128 characters) that makes the submission
   * idempotent: a retry with the same key returns the job created first.
   * Empty means no deduplication.
   */
  'idempotencyKey': (string);
  /**
   * Resume this earlier job: tasks that already finished keep their results
   * and only the others run again. Empty means a new job.
   */
  'resumeJobId': (string);
}
