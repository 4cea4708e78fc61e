// Original file: troupe/v1/jobs.proto

/**
 * Final status of one task.
 */
export const TaskStatus = {
  TASK_STATUS_UNSPECIFIED: 'TASK_STATUS_UNSPECIFIED',
  /**
   * Not started yet.
   */
  TASK_PENDING: 'TASK_PENDING',
  /**
   * An attempt is running.
   */
  TASK_RUNNING: 'TASK_RUNNING',
  /**
   * Graded and passed.
   */
  TASK_PASSED: 'TASK_PASSED',
  /**
   * Graded and failed (never retried).
   */
  TASK_FAILED: 'TASK_FAILED',
  /**
   * Could not be graded: infrastructure failure after all retries.
   */
  TASK_ERRORED: 'TASK_ERRORED',
  /**
   * Hit its wall-time limit.
   */
  TASK_TIMED_OUT: 'TASK_TIMED_OUT',
  /**
   * Cancelled with its job.
   */
  TASK_CANCELLED: 'TASK_CANCELLED',
} as const;

/**
 * Final status of one task.
 */
export type TaskStatus =
  | 'TASK_STATUS_UNSPECIFIED'
  | 0
  /**
   * Not started yet.
   */
  | 'TASK_PENDING'
  | 1
  /**
   * An attempt is running.
   */
  | 'TASK_RUNNING'
  | 2
  /**
   * Graded and passed.
   */
  | 'TASK_PASSED'
  | 3
  /**
   * Graded and failed (never retried).
   */
  | 'TASK_FAILED'
  | 4
  /**
   * Could not be graded: infrastructure failure after all retries.
   */
  | 'TASK_ERRORED'
  | 5
  /**
   * Hit its wall-time limit.
   */
  | 'TASK_TIMED_OUT'
  | 6
  /**
   * Cancelled with its job.
   */
  | 'TASK_CANCELLED'
  | 7

/**
 * Final status of one task.
 */
export type TaskStatus__Output = typeof TaskStatus[keyof typeof TaskStatus]
