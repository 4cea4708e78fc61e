// Original file: troupe/v1/jobs.proto

import type { TaskStatus as _troupe_v1_TaskStatus, TaskStatus__Output as _troupe_v1_TaskStatus__Output } from '../../troupe/v1/TaskStatus';
import type { RolloutUsage as _troupe_v1_RolloutUsage, RolloutUsage__Output as _troupe_v1_RolloutUsage__Output } from '../../troupe/v1/RolloutUsage';
import type { Long } from '@grpc/proto-loader';

/**
 * One episode.
 */
export interface RolloutResult {
  /**
   * The job's task id: "<task_id>.s<sample_index>".
   */
  'rolloutId'?: (string);
  /**
   * The suite's task id.
   */
  'taskId'?: (string);
  'sampleIndex'?: (number);
  'status'?: (_troupe_v1_TaskStatus);
  /**
   * The grader's score (1 pass, 0 fail); absent when the episode was not
   * graded (errored, cancelled, pending).
   */
  'reward'?: (number | string);
  'passed'?: (boolean);
  /**
   * Why the agent stopped ("finished", "max_steps", "idle", ...).
   */
  'stopReason'?: (string);
  'usage'?: (_troupe_v1_RolloutUsage | null);
  /**
   * The episode as one JSON object: {"messages": [OpenAI chat messages],
   * "tools": [OpenAI tool definitions], "metadata": {...}, "logprobs":
   * [{"messageIndex", "tokens": [{"token", "logprob", "bytes"?,
   * "topLogprobs"?}]}]} ("logprobs" only when asked for and returned by the
   * server). Empty while the episode has not finished or when it produced
   * no trajectory.
   */
  'trajectoryJson'?: (string);
  /**
   * Error of the last failed attempt; empty when none.
   */
  'error'?: (string);
  /**
   * Wall time of the episode and its grading, ms.
   */
  'durationMs'?: (number | string | Long);
  '_reward'?: "reward";
}

/**
 * One episode.
 */
export interface RolloutResult__Output {
  /**
   * The job's task id: "<task_id>.s<sample_index>".
   */
  'rolloutId': (string);
  /**
   * The suite's task id.
   */
  'taskId': (string);
  'sampleIndex': (number);
  'status': (_troupe_v1_TaskStatus__Output);
  /**
   * The grader's score (1 pass, 0 fail); absent when the episode was not
   * graded (errored, cancelled, pending).
   */
  'reward'?: (number);
  'passed': (boolean);
  /**
   * Why the agent stopped ("finished", "max_steps", "idle", ...).
   */
  'stopReason': (string);
  'usage': (_troupe_v1_RolloutUsage__Output | null);
  /**
   * The episode as one JSON object: {"messages": [OpenAI chat messages],
   * "tools": [OpenAI tool definitions], "metadata": {...}, "logprobs":
   * [{"messageIndex", "tokens": [{"token", "logprob", "bytes"?,
   * "topLogprobs"?}]}]} ("logprobs" only when asked for and returned by the
   * server). Empty while the episode has not finished or when it produced
   * no trajectory.
   */
  'trajectoryJson': (string);
  /**
   * Error of the last failed attempt; empty when none.
   */
  'error': (string);
  /**
   * Wall time of the episode and its grading, ms.
   */
  'durationMs': (number);
  '_reward'?: "reward";
}
