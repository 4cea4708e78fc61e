// Original file: troupe/v1/jobs.proto

/**
 * Kind of a `JobEvent`.
 */
export const JobEventType = {
  JOB_EVENT_TYPE_UNSPECIFIED: 'JOB_EVENT_TYPE_UNSPECIFIED',
  /**
   * The job was accepted and persisted.
   */
  JOB_QUEUED: 'JOB_QUEUED',
  /**
   * The job actor started fanning tasks out.
   */
  JOB_STARTED: 'JOB_STARTED',
  /**
   * The job actor resumed after a coordinator restart or a resubmission.
   */
  JOB_RESUMED: 'JOB_RESUMED',
  /**
   * Cancellation was requested; JOB_FINISHED follows.
   */
  JOB_CANCEL_REQUESTED: 'JOB_CANCEL_REQUESTED',
  /**
   * A task waits for capacity.
   */
  TASK_QUEUED: 'TASK_QUEUED',
  /**
   * A task attempt started (payload: attempt, host).
   */
  TASK_STARTED: 'TASK_STARTED',
  /**
   * Progress inside a task (payload: step, tokens, cost so far).
   */
  TASK_PROGRESS: 'TASK_PROGRESS',
  /**
   * A task was graded (payload: status, score).
   */
  TASK_GRADED: 'TASK_GRADED',
  /**
   * A task attempt failed on infrastructure and will be retried (payload:
   * attempt, error). Graded failures are never retried.
   */
  TASK_RETRY: 'TASK_RETRY',
  /**
   * A task reached a final status without a grade (errored, timed out,
   * cancelled); payload: status, error.
   */
  TASK_FINISHED: 'TASK_FINISHED',
  /**
   * Budget update for the job scope (payload: spent/reserved/limit USD).
   */
  BUDGET: 'BUDGET',
  /**
   * A log line worth showing to the user (`message`).
   */
  LOG: 'LOG',
  /**
   * The job reached a final state (payload: state, aggregate). Always the
   * last event of a job.
   */
  JOB_FINISHED: 'JOB_FINISHED',
} as const;

/**
 * Kind of a `JobEvent`.
 */
export type JobEventType =
  | 'JOB_EVENT_TYPE_UNSPECIFIED'
  | 0
  /**
   * The job was accepted and persisted.
   */
  | 'JOB_QUEUED'
  | 1
  /**
   * The job actor started fanning tasks out.
   */
  | 'JOB_STARTED'
  | 2
  /**
   * The job actor resumed after a coordinator restart or a resubmission.
   */
  | 'JOB_RESUMED'
  | 3
  /**
   * Cancellation was requested; JOB_FINISHED follows.
   */
  | 'JOB_CANCEL_REQUESTED'
  | 4
  /**
   * A task waits for capacity.
   */
  | 'TASK_QUEUED'
  | 5
  /**
   * A task attempt started (payload: attempt, host).
   */
  | 'TASK_STARTED'
  | 6
  /**
   * Progress inside a task (payload: step, tokens, cost so far).
   */
  | 'TASK_PROGRESS'
  | 7
  /**
   * A task was graded (payload: status, score).
   */
  | 'TASK_GRADED'
  | 8
  /**
   * A task attempt failed on infrastructure and will be retried (payload:
   * attempt, error). Graded failures are never retried.
   */
  | 'TASK_RETRY'
  | 9
  /**
   * A task reached a final status without a grade (errored, timed out,
   * cancelled); payload: status, error.
   */
  | 'TASK_FINISHED'
  | 10
  /**
   * Budget update for the job scope (payload: spent/reserved/limit USD).
   */
  | 'BUDGET'
  | 11
  /**
   * A log line worth showing to the user (`message`).
   */
  | 'LOG'
  | 12
  /**
   * The job reached a final state (payload: state, aggregate). Always the
   * last event of a job.
   */
  | 'JOB_FINISHED'
  | 13

/**
 * Kind of a `JobEvent`.
 */
export type JobEventType__Output = typeof JobEventType[keyof typeof JobEventType]
