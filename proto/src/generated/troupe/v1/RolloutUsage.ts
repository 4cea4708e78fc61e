// Original file: troupe/v1/jobs.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Token counts and spend of one rollout.
 */
export interface RolloutUsage {
  'promptTokens'?: (number | string | Long);
  'completionTokens'?: (number | string | Long);
  /**
   * Model calls (agent steps).
   */
  'steps'?: (number);
}

/**
 * Token counts and spend of one rollout.
 */
export interface RolloutUsage__Output {
  'promptTokens': (number);
  'completionTokens': (number);
  /**
   * Model calls (agent steps).
   */
  'steps': (number);
}
