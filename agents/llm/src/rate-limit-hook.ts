/** The answer of {@link RateLimitHook.acquire}. */
export type RateLimitDecision = { ok: true } | { ok: false; retryAfterMs: number };

/** What a rate-limit permit is requested for. */
export interface RateLimitRequest {
  /** Tokens the request may use: estimated prompt + completion cap (how OpenAI counts TPM). */
  tokens: number;
  /** Aborts when the call is cancelled. @default none */
  signal?: AbortSignal;
}

/**
 * Per-model request/token rate limiting, asked before every attempt. `{ok: true}` consumes a
 * permit; `{ok: false, retryAfterMs}` makes the client wait that long (within the caller's
 * deadline) and ask again. The coordinator implements it cluster-wide; without one the client
 * uses a local {@link TokenBucketRateLimiter} built from the registry's `rpm`/`tpm`.
 */
export interface RateLimitHook {
  /** Takes a permit for one request to `model` or says how long to wait. */
  acquire(model: string, request: RateLimitRequest): Promise<RateLimitDecision> | RateLimitDecision;
}
