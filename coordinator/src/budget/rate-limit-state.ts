import { invalidArgument } from '@troupe/proto';
import { z } from 'zod';
import { RequestsSchema, TokensSchema } from './budget-amount';

// Per-model rate limits as two token buckets (requests and tokens), each holding up to one
// minute's allowance and refilling continuously at limit/60 s. A token bucket needs O(1) state
// (two levels and a timestamp), so every admission commits a few bytes; a sliding window would
// have to keep every admission of the last minute (up to `rpm` entries). The price is that a full
// bucket admits a whole minute's allowance at once, which is also what providers allow.

const MINUTE_MS = 60_000;

/** Rate limits of one model; absent or `null` = unlimited. */
export const RateLimitsSchema = z.strictObject({
  /** Requests per minute. */
  rpm: RequestsSchema.min(1, { message: 'must be >= 1' }).nullable().optional(),
  /** Tokens per minute (prompt estimate + max output tokens of each call). */
  tpm: RequestsSchema.min(1, { message: 'must be >= 1' }).nullable().optional(),
});

/** Rate limits as a caller passes them. */
export type RateLimitsInput = z.input<typeof RateLimitsSchema>;

/** Persisted state of one model's buckets. */
export const RateLimitStateSchema = z.object({
  /** The model name (the actor id is derived from it). */
  model: z.string(),
  rpm: z.number().int().positive().nullable(),
  tpm: z.number().int().positive().nullable(),
  /** Request bucket level at `atMs`. */
  requests: z.number().nonnegative(),
  /** Token bucket level at `atMs`. */
  tokens: z.number().nonnegative(),
  /** When the levels were computed (ledger host clock). */
  atMs: z.number().int().nonnegative(),
});
/** Persisted state of one model's buckets. */
export type RateLimitState = z.infer<typeof RateLimitStateSchema>;

/** What a caller asks to admit: one request of an estimated `tokens`. */
export const AcquireSchema = z.strictObject({
  /** Tokens the call may use (prompt estimate + max output tokens). */
  tokens: TokensSchema,
});

/** Result of an admission: admitted, or when to try again. */
export type AcquireReply = { ok: true } | { ok: false; retryAfterMs: number };

/** Levels and limits of one model as reported. */
export interface RateLimitStatus {
  model: string;
  rpm: number | null;
  tpm: number | null;
  /** Requests that would be admitted now. */
  availableRequests: number | null;
  /** Tokens that would be admitted now. */
  availableTokens: number | null;
}

/** A model with no limits configured: every acquire is admitted. */
export function emptyRateLimitState(model: string): RateLimitState {
  return { model, rpm: null, tpm: null, requests: 0, tokens: 0, atMs: 0 };
}

/** The levels refilled up to `nowMs` (a clock that went backwards refills nothing). */
function refilled(state: RateLimitState, nowMs: number): { requests: number; tokens: number } {
  const elapsed = Math.max(0, nowMs - state.atMs);
  return {
    requests:
      state.rpm === null
        ? 0
        : Math.min(state.rpm, state.requests + (elapsed * state.rpm) / MINUTE_MS),
    tokens:
      state.tpm === null
        ? 0
        : Math.min(state.tpm, state.tokens + (elapsed * state.tpm) / MINUTE_MS),
  };
}

/**
 * Replaces the limits. Buckets start full; a bucket whose limit shrinks keeps at most the new
 * capacity; one that grows keeps its level (it refills to the new capacity over time).
 */
export function configureRateLimits(
  state: RateLimitState,
  limits: RateLimitsInput,
  nowMs: number,
): RateLimitState {
  const rpm = limits.rpm ?? null;
  const tpm = limits.tpm ?? null;
  const level = refilled(state, nowMs);
  return {
    model: state.model,
    rpm,
    tpm,
    requests: rpm === null ? 0 : state.rpm === null ? rpm : Math.min(rpm, level.requests),
    tokens: tpm === null ? 0 : state.tpm === null ? tpm : Math.min(tpm, level.tokens),
    atMs: nowMs,
  };
}

/**
 * Admits one request of `tokens` if both buckets hold enough, taking it out of them; otherwise
 * says how long until they will (nothing is taken, so a refused caller does not delay others).
 * @returns the next state (the input object when nothing was taken) and the reply
 * @throws TroupeError `INVALID_ARGUMENT` naming `tokens` when one call needs more than `tpm`
 */
export function acquire(
  state: RateLimitState,
  tokens: number,
  nowMs: number,
): { state: RateLimitState; reply: AcquireReply } {
  if (state.rpm === null && state.tpm === null) return { state, reply: { ok: true } };
  if (state.tpm !== null && tokens > state.tpm) {
    throw invalidArgument(
      'tokens',
      `must be <= the tpm limit of ${state.model} (${state.tpm})`,
      tokens,
    );
  }
  const level = refilled(state, nowMs);
  const requestWaitMs =
    state.rpm === null || level.requests >= 1 ? 0 : ((1 - level.requests) * MINUTE_MS) / state.rpm;
  const tokenWaitMs =
    state.tpm === null || level.tokens >= tokens
      ? 0
      : ((tokens - level.tokens) * MINUTE_MS) / state.tpm;
  const waitMs = Math.max(requestWaitMs, tokenWaitMs);
  if (waitMs > 0)
    return { state, reply: { ok: false, retryAfterMs: Math.max(1, Math.ceil(waitMs)) } };
  return {
    state: {
      ...state,
      requests: state.rpm === null ? 0 : level.requests - 1,
      tokens: state.tpm === null ? 0 : level.tokens - tokens,
      atMs: nowMs,
    },
    reply: { ok: true },
  };
}

/** Current limits and what would be admitted at `nowMs`. */
export function rateLimitStatus(state: RateLimitState, nowMs: number): RateLimitStatus {
  const level = refilled(state, nowMs);
  return {
    model: state.model,
    rpm: state.rpm,
    tpm: state.tpm,
    availableRequests: state.rpm === null ? null : Math.floor(level.requests),
    availableTokens: state.tpm === null ? null : Math.floor(level.tokens),
  };
}

/**
 * Checks a model name: 1 to 200 printable characters.
 * @throws TroupeError `INVALID_ARGUMENT` naming `field`
 */
export function validateModelName(model: unknown, field = 'model'): string {
  if (typeof model !== 'string' || !/^[\x21-\x7e]{1,200}$/.test(model)) {
    throw invalidArgument(
      field,
      'must be 1 to 200 printable ASCII characters without spaces',
      model,
    );
  }
  return model;
}
