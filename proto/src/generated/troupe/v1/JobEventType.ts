// Original file: troupe/v1/jobs.proto

/**
 * Kind of a `JobEvent`.
 */
export const JobEventType = {
  JOB_EVENT_TYPE_UNSPECIFIED: 'JOB_EVENT_TYPE_UNSPECIFIED',
  /**
   * The job was accepted and persisted. payload: {"kind", "name"}.
   */
  JOB_QUEUED: 'JOB_QUEUED',
  /**
   * The job actor started fanning tasks out. payload: {"total", "concurrency"}.
   */
  JOB_STARTED: 'JOB_STARTED',
  /**
   * The job actor resumed after a coordinator restart or a resubmission
   * (`resume_job_id`). payload: {"rerun", "total"}.
   */
  JOB_RESUMED: 'JOB_RESUMED',
  /**
   * Cancellation was requested; JOB_FINISHED follows. payload: {"reason"}.
   */
  JOB_CANCEL_REQUESTED: 'JOB_CANCEL_REQUESTED',
  /**
   * An attempt was dispatched to its task actor. payload: {"attempt"}.
   */
  TASK_QUEUED: 'TASK_QUEUED',
  /**
   * A task attempt started. payload: {"attempt", "host", "execution"}.
   */
  TASK_STARTED: 'TASK_STARTED',
  /**
   * Progress inside a task. payload: {"step", "tokens", "costUsd"} (so far),
   * plus driver-specific keys.
   */
  TASK_PROGRESS: 'TASK_PROGRESS',
  /**
   * A task was graded. payload: {"status" (TASK_PASSED, TASK_FAILED or
   * TASK_TIMED_OUT), "score", "attempt", "durationMs"}.
   */
  TASK_GRADED: 'TASK_GRADED',
  /**
   * A task attempt failed on infrastructure and will be retried. payload:
   * {"attempt", "nextAttempt", "retryAtMs", "error"}. Graded failures are
   * never retried.
   */
  TASK_RETRY: 'TASK_RETRY',
  /**
   * A task reached a final status without a grade (errored, cancelled).
   * payload: {"status", "error"}.
   */
  TASK_FINISHED: 'TASK_FINISHED',
  /**
   * Budget update for the job scope. payload: {"spentUsd", "tokens",
   * "limitUsd", "limitTokens"}.
   */
  BUDGET: 'BUDGET',
  /**
   * A log line worth showing to the user (`message`).
   */
  LOG: 'LOG',
  /**
   * The job reached a final state. payload: {"state", "reason", "aggregate"}
   * with the aggregate's counts (total, passed, failed, errored, timedOut,
   * cancelled, pending), passRate, costUsd, tokens and wallMs. Always the
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
   * The job was accepted and persisted. payload: {"kind", "name"}.
   */
  | 'JOB_QUEUED'
  | 1
  /**
   * The job actor started fanning tasks out. payload: {"total", "concurrency"}.
   */
  | 'JOB_STARTED'
  | 2
  /**
   * The job actor resumed after a coordinator restart or a resubmission
   * (`resume_job_id`). payload: {"rerun", "total"}.
   */
  | 'JOB_RESUMED'
  | 3
  /**
   * Cancellation was requested; JOB_FINISHED follows. payload: {"reason"}.
   */
  | 'JOB_CANCEL_REQUESTED'
  | 4
  /**
   * An attempt was dispatched to its task actor. payload: {"attempt"}.
   */
  | 'TASK_QUEUED'
  | 5
  /**
   * A task attempt started. payload: {"attempt", "host", "execution"}.
   */
  | 'TASK_STARTED'
  | 6
  /**
   * Progress inside a task. payload: {"step", "tokens", "costUsd"} (so far),
   * plus driver-specific keys.
   */
  | 'TASK_PROGRESS'
  | 7
  /**
   * A task was graded. payload: {"status" (TASK_PASSED, TASK_FAILED or
   * TASK_TIMED_OUT), "score", "attempt", "durationMs"}.
   */
  | 'TASK_GRADED'
  | 8
  /**
   * A task attempt failed on infrastructure and will be retried. payload:
   * {"attempt", "nextAttempt", "retryAtMs", "error"}. Graded failures are
   * never retried.
   */
  | 'TASK_RETRY'
  | 9
  /**
   * A task reached a final status without a grade (errored, cancelled).
   * payload: {"status", "error"}.
   */
  | 'TASK_FINISHED'
  | 10
  /**
   * Budget update for the job scope. payload: {"spentUsd", "tokens",
   * "limitUsd", "limitTokens"}.
   */
  | 'BUDGET'
  | 11
  /**
   * A log line worth showing to the user (`message`).
   */
  | 'LOG'
  | 12
  /**
   * The job reached a final state. payload: {"state", "reason", "aggregate"}
   * with the aggregate's counts (total, passed, failed, errored, timedOut,
   * cancelled, pending), passRate, costUsd, tokens and wallMs. Always the
   * last event of a job.
   */
  | 'JOB_FINISHED'
  | 13

/**
 * Kind of a `JobEvent`.
 */
export type JobEventType__Output = typeof JobEventType[keyof typeof JobEventType]
