import { createHash } from 'node:crypto';
import { defineActor } from '@troupe/actors';
import { invalidArgument } from '@troupe/proto';
import { z } from 'zod';
import {
  AcquireSchema,
  acquire,
  configureRateLimits,
  emptyRateLimitState,
  RateLimitsSchema,
  RateLimitStateSchema,
  rateLimitStatus,
  validateModelName,
} from './rate-limit-state';

/** Actor kind of the per-model rate limiters; one actor per model, shared by the whole cluster. */
export const RATE_LIMIT_KIND = 'rate-limit';

const ModelSchema = z.string().refine(
  (m) => {
    try {
      validateModelName(m);
      return true;
    } catch {
      return false;
    }
  },
  { message: 'must be 1 to 200 printable ASCII characters without spaces' },
);

/**
 * The actor id of `model`'s rate limiter: the name with characters outside `[A-Za-z0-9_-]`
 * replaced by `_` (cut to 100), then `-` and 12 hex digits of its SHA-256, so that names differing
 * only in replaced characters (`gpt-4.1` and `gpt-4_1`) get different actors.
 */
export function rateLimitActorId(model: string): string {
  validateModelName(model);
  const readable = model.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 100);
  const hash = createHash('sha256').update(model).digest('hex').slice(0, 12);
  return `${readable}-${hash}`;
}

/** What a caller passes to {@link createRateLimitActor}. */
export interface RateLimitActorOptions {
  /** Passivate after this long without messages. @default 600000 */
  idleTimeoutMs?: number;
  /** Clock for the buckets (tests). @default Date.now */
  clock?: () => number;
}

/**
 * Defines the `rate-limit` actor kind: one actor per model (id {@link rateLimitActorId}) admits
 * requests against that model's requests-per-minute and tokens-per-minute limits with two token
 * buckets, one turn at a time, so the limits hold across the whole cluster. It is a sibling of the
 * budget ledger rather than part of it: limits are per model, not per budget tree, and a hot model
 * must not queue behind budget bookkeeping.
 */
export function createRateLimitActor(options: RateLimitActorOptions = {}) {
  const clock = options.clock ?? Date.now;
  const checkModel = (id: string, model: string): void => {
    if (rateLimitActorId(model) !== id) {
      throw invalidArgument('model', `is not the model of rate limiter ${id}`, model);
    }
  };
  return defineActor({
    kind: RATE_LIMIT_KIND,
    state: RateLimitStateSchema,
    initialState: () => emptyRateLimitState(''),
    messages: {
      configure: z.strictObject({ model: ModelSchema, limits: RateLimitsSchema }),
      acquire: AcquireSchema.extend({ model: ModelSchema }),
      status: z.strictObject({ model: ModelSchema }),
    },
    handlers: {
      configure: (ctx, msg, state) => {
        checkModel(ctx.self.id, msg.model);
        const now = clock();
        const next = configureRateLimits({ ...state, model: msg.model }, msg.limits, now);
        return { state: next, reply: rateLimitStatus(next, now) };
      },
      acquire: (ctx, msg, state) => {
        checkModel(ctx.self.id, msg.model);
        const current = { ...state, model: msg.model };
        const out = acquire(current, msg.tokens, clock());
        // A refusal (or an unlimited model) takes nothing: no state to commit.
        return out.state === current
          ? { reply: out.reply }
          : { state: out.state, reply: out.reply };
      },
      status: (ctx, msg, state) => {
        checkModel(ctx.self.id, msg.model);
        return { reply: rateLimitStatus({ ...state, model: msg.model }, clock()) };
      },
    },
    idleTimeoutMs: options.idleTimeoutMs ?? 600_000,
  });
}

/** The type of a `rate-limit` definition made by {@link createRateLimitActor}. */
export type RateLimitDefinition = ReturnType<typeof createRateLimitActor>;

/** The `rate-limit` actor kind with default options. */
export const RateLimitActor: RateLimitDefinition = createRateLimitActor();
