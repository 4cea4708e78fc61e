import { setTimeout as sleep } from 'node:timers/promises';
import { type ActorRef, type RefFactory } from '@troupe/actors';
import { fromAbortSignal, parseWith, TroupeError } from '@troupe/proto';
import { z } from 'zod';
import { type BudgetCallOptions } from './budget-ledger';
import { callWithRetry } from './internal/call-with-retry';
import { RateLimitActor, rateLimitActorId, type RateLimitDefinition } from './rate-limit-actor';
import {
  AcquireSchema,
  type AcquireReply,
  type RateLimitsInput,
  RateLimitsSchema,
  type RateLimitStatus,
  validateModelName,
} from './rate-limit-state';

/** What a caller passes to the {@link RateLimiter} constructor. */
export interface RateLimiterOptions {
  /** Default deadline of each call. @default 10000 */
  timeoutMs?: number;
  /** The rate-limit actor definition hosted in the cluster (only its kind is used). @default RateLimitActor */
  definition?: RateLimitDefinition;
}

/** Options of {@link RateLimiter.acquireOrWait}. */
export interface AcquireOrWaitOptions extends BudgetCallOptions {
  /** Give up (`UNAVAILABLE`, retryable) when admission would take longer than this. @default 60000 */
  maxWaitMs?: number;
}

const TimeoutSchema = z.object({
  timeoutMs: z.number().int().positive({ message: 'must be a positive integer' }).optional(),
  maxWaitMs: z.number().int().nonnegative({ message: 'must be >= 0' }).optional(),
});

/**
 * Typed client of the per-model `rate-limit` actors: cluster-wide requests-per-minute and
 * tokens-per-minute admission. A model with no limits configured admits everything.
 */
export class RateLimiter {
  private readonly timeoutMs: number;
  private readonly definition: RateLimitDefinition;

  /** @param refs - an `ActorSystem` (or any ref factory) */
  constructor(
    private readonly refs: RefFactory,
    options: RateLimiterOptions = {},
  ) {
    this.timeoutMs = parseWith(TimeoutSchema, { timeoutMs: options.timeoutMs }).timeoutMs ?? 10_000;
    this.definition = options.definition ?? RateLimitActor;
  }

  /**
   * Sets `model`'s limits (absent or `null` = unlimited), shared by every caller in the cluster.
   * Buckets start full.
   */
  async setLimits(
    model: string,
    limits: RateLimitsInput,
    options: BudgetCallOptions = {},
  ): Promise<RateLimitStatus> {
    validateModelName(model);
    const parsed = parseWith(RateLimitsSchema, limits, { prefix: 'limits' });
    return this.call(options, (ref, timeoutMs, signal) =>
      ref(model).ask('configure', { model, limits: parsed }, { timeoutMs, ...signal }),
    );
  }

  /**
   * Admits one request of `tokens` (prompt estimate + max output tokens) for `model` now, or says
   * how long to wait: `{ok: true}` or `{ok: false, retryAfterMs}`.
   * @throws TroupeError `INVALID_ARGUMENT` naming `model` or `tokens` (also when `tokens` exceeds
   * the model's tpm, which no wait would fix)
   */
  async acquire(
    model: string,
    request: { tokens: number },
    options: BudgetCallOptions = {},
  ): Promise<AcquireReply> {
    validateModelName(model);
    const { tokens } = parseWith(AcquireSchema, request);
    return this.call(options, (ref, timeoutMs, signal) =>
      ref(model).ask('acquire', { model, tokens }, { timeoutMs, ...signal }),
    );
  }

  /**
   * {@link acquire}, waiting `retryAfterMs` between attempts until admitted.
   * @throws TroupeError `UNAVAILABLE` (retryable) when the next admission is further away than
   * `maxWaitMs`; `CANCELLED`/`TIMEOUT` from the signal
   */
  async acquireOrWait(
    model: string,
    request: { tokens: number },
    options: AcquireOrWaitOptions = {},
  ): Promise<void> {
    const maxWaitMs =
      parseWith(TimeoutSchema, { maxWaitMs: options.maxWaitMs }).maxWaitMs ?? 60_000;
    const giveUpAt = Date.now() + maxWaitMs;
    for (;;) {
      const reply = await this.acquire(model, request, options);
      if (reply.ok) return;
      if (Date.now() + reply.retryAfterMs > giveUpAt) {
        throw new TroupeError(
          'UNAVAILABLE',
          `rate limit of ${model}: next admission in ${reply.retryAfterMs} ms, beyond maxWaitMs ${maxWaitMs}`,
          { details: { model, retryAfterMs: reply.retryAfterMs } },
        );
      }
      try {
        await sleep(
          reply.retryAfterMs,
          undefined,
          options.signal ? { signal: options.signal } : {},
        );
      } catch (err) {
        if (options.signal?.aborted) throw fromAbortSignal(options.signal);
        throw err;
      }
    }
  }

  /** `model`'s limits and what would be admitted now. */
  async status(model: string, options: BudgetCallOptions = {}): Promise<RateLimitStatus> {
    validateModelName(model);
    return this.call(options, (ref, timeoutMs, signal) =>
      ref(model).ask('status', { model }, { timeoutMs, ...signal }),
    );
  }

  private async call<T>(
    options: BudgetCallOptions,
    attempt: (
      ref: (model: string) => ActorRef<RateLimitDefinition>,
      timeoutMs: number,
      signal: { signal?: AbortSignal },
    ) => Promise<T>,
  ): Promise<T> {
    const timeoutMs =
      parseWith(TimeoutSchema, { timeoutMs: options.timeoutMs }).timeoutMs ?? this.timeoutMs;
    const ref = (model: string) => this.refs.ref(this.definition, rateLimitActorId(model));
    const signal = options.signal ? { signal: options.signal } : {};
    return callWithRetry((remainingMs) => attempt(ref, remainingMs, signal), {
      timeoutMs,
      signal: options.signal,
    });
  }
}
