import { parseWith } from '@troupe/proto';
import { z } from 'zod';

/**
 * How {@link LlmClient} retries a failed attempt (HTTP 408/409/429/5xx, connection errors,
 * malformed bodies, per-attempt timeouts). Delays grow exponentially with jitter unless the
 * provider says how long to wait (`retry-after-ms` / `retry-after`); no wait ever runs past the
 * caller's signal or `totalTimeoutMs`.
 */
export interface RetryOptions {
  /** Attempts per call, the first one included. @default 4 */
  maxAttempts?: number;
  /** Delay before the second attempt, doubled for each later one. @default 500 */
  initialBackoffMs?: number;
  /** Upper bound of a computed delay. @default 8000 */
  maxBackoffMs?: number;
  /**
   * Fraction of a computed delay removed at random (0 = none, 0.25 = delay × [0.75, 1]), so
   * callers that failed together do not retry together. Not applied to provider-given delays.
   * @default 0.25
   */
  jitterRatio?: number;
  /**
   * A provider-requested wait longer than this ends the call with `UNAVAILABLE` (carrying
   * `details.retryAfterMs`) instead of holding the caller.
   * @default 60000
   */
  maxRetryAfterMs?: number;
}

/** {@link RetryOptions} once validated and defaulted. */
export type RetryConfig = Required<RetryOptions>;

const RetryOptionsSchema = z
  .object({
    maxAttempts: z.int().min(1, 'must be an integer ≥ 1').default(4),
    initialBackoffMs: z.number().min(0, 'must be ≥ 0').default(500),
    maxBackoffMs: z.number().min(0, 'must be ≥ 0').default(8_000),
    jitterRatio: z.number().min(0, 'must be ≥ 0').max(1, 'must be ≤ 1').default(0.25),
    maxRetryAfterMs: z.number().min(0, 'must be ≥ 0').default(60_000),
  })
  .strict();

/** Validates and defaults {@link RetryOptions}; throws `INVALID_ARGUMENT` naming the field. */
export function resolveRetryConfig(options: RetryOptions = {}): RetryConfig {
  return parseWith(RetryOptionsSchema, options, { prefix: 'retry' });
}

/**
 * The computed delay before attempt `nextAttempt` (2, 3, …):
 * `min(initialBackoffMs × 2^(nextAttempt − 2), maxBackoffMs) × (1 − jitterRatio × random())`.
 */
export function backoffDelayMs(
  nextAttempt: number,
  config: RetryConfig,
  random: () => number = Math.random,
): number {
  const exponent = Math.max(0, nextAttempt - 2);
  const base = Math.min(config.initialBackoffMs * 2 ** exponent, config.maxBackoffMs);
  return base * (1 - config.jitterRatio * random());
}
