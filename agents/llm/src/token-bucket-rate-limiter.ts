import type { ModelRegistry } from './model-registry';
import type { RateLimitDecision, RateLimitHook, RateLimitRequest } from './rate-limit-hook';

/** Per-model limits of a {@link TokenBucketRateLimiter}. */
export interface ModelRateLimits {
  /** Requests per minute. @default unlimited */
  rpm?: number;
  /** Tokens per minute. @default unlimited */
  tpm?: number;
}

/** Options of {@link TokenBucketRateLimiter}. */
export interface TokenBucketRateLimiterOptions {
  /** Limits by registry model name; models not listed are not limited. */
  limits: Record<string, ModelRateLimits>;
  /** Monotonic clock in ms. @default performance.now */
  nowMs?: () => number;
}

interface Bucket {
  capacity: number;
  level: number;
  perMs: number;
}

interface ModelBuckets {
  requests: Bucket | undefined;
  tokens: Bucket | undefined;
  updatedMs: number;
}

/**
 * A process-local {@link RateLimitHook}: two token buckets per model (requests and tokens), each
 * holding one minute's allowance and refilling continuously. A request needing more tokens than a
 * whole minute's allowance is let through once the bucket is full, so it is delayed, not refused
 * forever.
 */
export class TokenBucketRateLimiter implements RateLimitHook {
  private readonly buckets = new Map<string, ModelBuckets>();
  private readonly nowMs: () => number;

  /** @param options - per-model limits; buckets start full */
  constructor(options: TokenBucketRateLimiterOptions) {
    this.nowMs = options.nowMs ?? (() => performance.now());
    const now = this.nowMs();
    for (const [model, limits] of Object.entries(options.limits)) {
      if (limits.rpm === undefined && limits.tpm === undefined) continue;
      this.buckets.set(model, {
        requests: limits.rpm === undefined ? undefined : bucket(limits.rpm),
        tokens: limits.tpm === undefined ? undefined : bucket(limits.tpm),
        updatedMs: now,
      });
    }
  }

  /** A limiter with the `rpm`/`tpm` of every registry model that sets them. */
  static fromRegistry(
    registry: ModelRegistry,
    options: Omit<TokenBucketRateLimiterOptions, 'limits'> = {},
  ): TokenBucketRateLimiter {
    const limits: Record<string, ModelRateLimits> = {};
    for (const name of registry.names()) {
      const { rpm, tpm } = registry.get(name);
      limits[name] = { rpm, tpm };
    }
    return new TokenBucketRateLimiter({ ...options, limits });
  }

  /** Whether any model is limited (the client skips the hook otherwise). */
  get limitsAnything(): boolean {
    return this.buckets.size > 0;
  }

  /** Takes one request and `request.tokens` from `model`'s buckets, or says how long to wait. */
  acquire(model: string, request: RateLimitRequest): RateLimitDecision {
    const state = this.buckets.get(model);
    if (state === undefined) return { ok: true };
    const now = this.nowMs();
    const elapsed = Math.max(0, now - state.updatedMs);
    state.updatedMs = now;
    refill(state.requests, elapsed);
    refill(state.tokens, elapsed);
    const waitMs = Math.max(
      waitFor(state.requests, 1),
      waitFor(state.tokens, Math.max(0, request.tokens)),
    );
    if (waitMs > 0) return { ok: false, retryAfterMs: Math.ceil(waitMs) };
    take(state.requests, 1);
    take(state.tokens, Math.max(0, request.tokens));
    return { ok: true };
  }
}

function bucket(perMinute: number): Bucket {
  return { capacity: perMinute, level: perMinute, perMs: perMinute / 60_000 };
}

function refill(b: Bucket | undefined, elapsedMs: number): void {
  if (b !== undefined) b.level = Math.min(b.capacity, b.level + elapsedMs * b.perMs);
}

function waitFor(b: Bucket | undefined, amount: number): number {
  if (b === undefined) return 0;
  const needed = Math.min(amount, b.capacity);
  return b.level >= needed ? 0 : (needed - b.level) / b.perMs;
}

function take(b: Bucket | undefined, amount: number): void {
  if (b !== undefined) b.level = Math.max(0, b.level - Math.min(amount, b.capacity));
}
