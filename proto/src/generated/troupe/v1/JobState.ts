// Original file: troupe/v1/jobs.proto

/**
 * Lifecycle of a job: QUEUED -> RUNNING -> SUCCEEDED | FAILED | CANCELLED.
 */
export const JobState = {
  JOB_STATE_UNSPECIFIED: 'JOB_STATE_UNSPECIFIED',
  QUEUED: 'QUEUED',
  RUNNING: 'RUNNING',
  /**
   * Every task reached a final status (graded failures still count as a
   * successful run of the job).
   */
  SUCCEEDED: 'SUCCEEDED',
  /**
   * The job could not run to completion (invalid tasks, budget exhausted,
   * infrastructure failure).
   */
  FAILED: 'FAILED',
  CANCELLED: 'CANCELLED',
} as const;

/**
 * Lifecycle of a job: QUEUED -> RUNNING -> SUCCEEDED | FAILED | CANCELLED.
 */
export type JobState =
  | 'JOB_STATE_UNSPECIFIED'
  | 0
  | 'QUEUED'
  | 1
  | 'RUNNING'
  | 2
  /**
   * Every task reached a final status (graded failures still count as a
   * successful run of the job).
   */
  | 'SUCCEEDED'
  | 3
  /**
   * The job could not run to completion (invalid tasks, budget exhausted,
   * infrastructure failure).
   */
  | 'FAILED'
  | 4
  | 'CANCELLED'
  | 5

/**
 * Lifecycle of a job: QUEUED -> RUNNING -> SUCCEEDED | FAILED | CANCELLED.
 */
export type JobState__Output = typeof JobState[keyof typeof JobState]
