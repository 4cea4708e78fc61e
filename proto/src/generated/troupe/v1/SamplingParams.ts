// Original file: troupe/v1/jobs.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Sampling settings of every model call of a rollout.
 */
export interface SamplingParams {
  /**
   * 0..2; absent: the server's default.
   */
  'temperature'?: (number | string);
  /**
   * (0, 1]; absent: the server's default.
   */
  'topP'?: (number | string);
  /**
   * Seed for servers that honour it (0..2^31-1); absent: none.
   */
  'seed'?: (number | string | Long);
  /**
   * Ask for per-token log-probabilities (kept in the trajectory).
   */
  'logprobs'?: (boolean);
  /**
   * Alternatives per token, 0..20 (with `logprobs`); absent: none.
   */
  'topLogprobs'?: (number);
  /**
   * Completion cap per model call, 1..32768; absent: 4096.
   */
  'maxTokens'?: (number);
  '_temperature'?: "temperature";
  '_topP'?: "topP";
  '_seed'?: "seed";
  '_topLogprobs'?: "topLogprobs";
  '_maxTokens'?: "maxTokens";
}

/**
 * Sampling settings of every model call of a rollout.
 */
export interface SamplingParams__Output {
  /**
   * 0..2; absent: the server's default.
   */
  'temperature'?: (number);
  /**
   * (0, 1]; absent: the server's default.
   */
  'topP'?: (number);
  /**
   * Seed for servers that honour it (0..2^31-1); absent: none.
   */
  'seed'?: (number);
  /**
   * Ask for per-token log-probabilities (kept in the trajectory).
   */
  'logprobs': (boolean);
  /**
   * Alternatives per token, 0..20 (with `logprobs`); absent: none.
   */
  'topLogprobs'?: (number);
  /**
   * Completion cap per model call, 1..32768; absent: 4096.
   */
  'maxTokens'?: (number);
  '_temperature'?: "temperature";
  '_topP'?: "topP";
  '_seed'?: "seed";
  '_topLogprobs'?: "topLogprobs";
  '_maxTokens'?: "maxTokens";
}
