// Original file: troupe/v1/jobs.proto

import type { TaskStatus as _troupe_v1_TaskStatus, TaskStatus__Output as _troupe_v1_TaskStatus__Output } from '../../troupe/v1/TaskStatus';
import type { Long } from '@grpc/proto-loader';

/**
 * Result of one task.
 */
export interface TaskResult {
  'taskId'?: (string);
  'status'?: (_troupe_v1_TaskStatus);
  /**
   * Grader score, usually in [0, 1]; absent when the task was not graded.
   */
  'score'?: (number | string);
  /**
   * Attempts made, counting the first one (0 while pending).
   */
  'attempts'?: (number);
  /**
   * LLM spend of all attempts, USD.
   */
  'costUsd'?: (number | string);
  /**
   * Prompt + completion tokens of all attempts.
   */
  'tokens'?: (number | string | Long);
  /**
   * Wall time of the last attempt, ms.
   */
  'durationMs'?: (number | string | Long);
  /**
   * Why the agent stopped (for example "finished", "max_steps", "budget").
   */
  'stopReason'?: (string);
  /**
   * Error message of the last failed attempt; empty when none.
   */
  'error'?: (string);
  /**
   * Artifact paths, usable with GetArtifact.
   */
  'artifacts'?: (string)[];
  /**
   * Grader and benchmark details as a JSON object; empty if none.
   */
  'detailsJson'?: (string);
  '_score'?: "score";
}

/**
 * Result of one task.
 */
export interface TaskResult__Output {
  'taskId': (string);
  'status': (_troupe_v1_TaskStatus__Output);
  /**
   * Grader score, usually in [0, 1]; absent when the task was not graded.
   */
  'score'?: (number);
  /**
   * Attempts made, counting the first one (0 while pending).
   */
  'attempts': (number);
  /**
   * LLM spend of all attempts, USD.
   */
  'costUsd': (number);
  /**
   * Prompt + completion tokens of all attempts.
   */
  'tokens': (number);
  /**
   * Wall time of the last attempt, ms.
   */
  'durationMs': (number);
  /**
   * Why the agent stopped (for example "finished", "max_steps", "budget").
   */
  'stopReason': (string);
  /**
   * Error message of the last failed attempt; empty when none.
   */
  'error': (string);
  /**
   * Artifact paths, usable with GetArtifact.
   */
  'artifacts': (string)[];
  /**
   * Grader and benchmark details as a JSON object; empty if none.
   */
  'detailsJson': (string);
  '_score'?: "score";
}
