import { z } from 'zod';

// Money is kept as integer nano-dollars inside the ledger: sums of floating-point dollars drift
// (0.1 + 0.2 !== 0.3), and a hard cap must compare exactly. A nano-dollar resolves per-token
// prices (0.15 USD per million tokens is 150 nanos per token); Number.MAX_SAFE_INTEGER nanos is
// about 9 million USD, far above the largest accepted value (1 million USD).

/** Nano-dollars per dollar. */
export const NANOS_PER_USD = 1_000_000_000;

/** Largest USD amount or limit the ledger accepts. */
export const MAX_USD = 1_000_000;

/** Largest token amount or limit the ledger accepts. */
export const MAX_TOKENS = 1_000_000_000_000;

/** Largest request-count limit the ledger accepts. */
export const MAX_REQUESTS = 1_000_000_000;

/** USD to integer nano-dollars (rounded to the nearest nano). */
export function usdToNanos(usd: number): number {
  return Math.round(usd * NANOS_PER_USD);
}

/** Integer nano-dollars to USD. */
export function nanosToUsd(nanos: number): number {
  return nanos / NANOS_PER_USD;
}

/** A USD amount: finite, ≥ 0, ≤ {@link MAX_USD}. */
export const UsdSchema = z
  .number()
  .finite()
  .nonnegative({ message: 'must be >= 0' })
  .max(MAX_USD, { message: `must be <= ${MAX_USD}` });

/** A token count: an integer, ≥ 0, ≤ {@link MAX_TOKENS}. */
export const TokensSchema = z
  .number()
  .int({ message: 'must be an integer' })
  .nonnegative({ message: 'must be >= 0' })
  .max(MAX_TOKENS, { message: `must be <= ${MAX_TOKENS}` });

/** A request count: an integer, ≥ 0, ≤ {@link MAX_REQUESTS}. */
export const RequestsSchema = z
  .number()
  .int({ message: 'must be an integer' })
  .nonnegative({ message: 'must be >= 0' })
  .max(MAX_REQUESTS, { message: `must be <= ${MAX_REQUESTS}` });

/** What a reservation holds or a settle records: dollars and tokens of one model call. */
export const BudgetAmountSchema = z.strictObject({
  /** Cost in USD. */
  usd: UsdSchema,
  /** Tokens (input + output). */
  tokens: TokensSchema,
});

/** An amount of dollars and tokens (one model call). */
export type BudgetAmount = z.infer<typeof BudgetAmountSchema>;

/**
 * Limits of a scope; an absent or `null` field is unlimited. `requests` caps the number of model
 * calls (each reservation counts one).
 */
export const BudgetLimitsSchema = z.strictObject({
  /** Cap on dollars. */
  usd: UsdSchema.nullable().optional(),
  /** Cap on tokens. */
  tokens: TokensSchema.nullable().optional(),
  /** Cap on model calls. */
  requests: RequestsSchema.nullable().optional(),
});

/** Limits of a scope as a caller passes them (absent or `null` = unlimited). */
export type BudgetLimitsInput = z.input<typeof BudgetLimitsSchema>;

/** Limits of a scope as the ledger reports them (`null` = unlimited). */
export interface BudgetLimits {
  usd: number | null;
  tokens: number | null;
  requests: number | null;
}

/** Dollars, tokens and model calls: what a scope has spent or holds in reservations. */
export interface BudgetTotals {
  usd: number;
  tokens: number;
  requests: number;
}
