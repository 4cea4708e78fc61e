// Original file: troupe/v1/jobs.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Counts and totals over every task of a job.
 */
export interface JobAggregate {
  'total'?: (number);
  'passed'?: (number);
  'failed'?: (number);
  'errored'?: (number);
  'timedOut'?: (number);
  /**
   * Tasks not finished (pending or running).
   */
  'pending'?: (number);
  /**
   * passed / (total - pending), in [0, 1]; absent while no task has finished.
   */
  'passRate'?: (number | string);
  /**
   * Total LLM spend, USD.
   */
  'costUsd'?: (number | string);
  'promptTokens'?: (number | string | Long);
  'completionTokens'?: (number | string | Long);
  /**
   * Wall time from JOB_STARTED to JOB_FINISHED (or to now while running), ms.
   */
  'wallMs'?: (number | string | Long);
  /**
   * Benchmark-specific aggregate metrics as a JSON object; empty if none.
   */
  'extraJson'?: (string);
  /**
   * Tasks cancelled with their job (TASK_CANCELLED).
   */
  'cancelled'?: (number);
  '_passRate'?: "passRate";
}

/**
 * Counts and totals over every task of a job.
 */
export interface JobAggregate__Output {
  'total': (number);
  'passed': (number);
  'failed': (number);
  'errored': (number);
  'timedOut': (number);
  /**
   * Tasks not finished (pending or running).
   */
  'pending': (number);
  /**
   * passed / (total - pending), in [0, 1]; absent while no task has finished.
   */
  'passRate'?: (number);
  /**
   * Total LLM spend, USD.
   */
  'costUsd': (number);
  'promptTokens': (number);
  'completionTokens': (number);
  /**
   * Wall time from JOB_STARTED to JOB_FINISHED (or to now while running), ms.
   */
  'wallMs': (number);
  /**
   * Benchmark-specific aggregate metrics as a JSON object; empty if none.
   */
  'extraJson': (string);
  /**
   * Tasks cancelled with their job (TASK_CANCELLED).
   */
  'cancelled': (number);
  '_passRate'?: "passRate";
}
