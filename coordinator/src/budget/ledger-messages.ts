import { z } from 'zod';
import { BudgetLimitsSchema, TokensSchema, UsdSchema } from './budget-amount';
import { RESERVATION_ID_PATTERN } from './ledger-state';
import { ScopeIdSchema } from './scope-id';

/** Longest reservation time-to-live: one day. */
export const MAX_TTL_MS = 86_400_000;

/** A reservation's time to live in ms: an integer from 1 to one day. */
export const TtlMsSchema = z
  .number()
  .int({ message: 'must be an integer' })
  .min(1, { message: 'must be >= 1' })
  .max(MAX_TTL_MS, { message: `must be <= ${MAX_TTL_MS}` });

/** Who holds a reservation (an actor address or session id), for diagnostics: 1 to 200 chars. */
export const HolderSchema = z
  .string()
  .min(1, { message: 'must not be empty' })
  .max(200, { message: 'must have at most 200 characters' });

/** The caller's idempotency key of a reserve: 1 to 128 printable ASCII characters. */
export const RequestIdSchema = z
  .string()
  .regex(/^[\x21-\x7e]{1,128}$/, { message: 'must be 1 to 128 printable ASCII characters' });

/** A reservation id as handed out by the ledger (`r` + base-36 sequence). */
export const ReservationIdSchema = z
  .string()
  .regex(RESERVATION_ID_PATTERN, { message: 'must be a reservation id returned by reserve (r…)' });

/**
 * Messages of the `budget-ledger` actor kind (the wire protocol behind {@link BudgetLedger}).
 * Dollars are USD; the ledger keeps them as integer nano-dollars.
 */
export const LedgerMessages = {
  reserve: z.strictObject({
    scope: ScopeIdSchema,
    usd: UsdSchema,
    tokens: TokensSchema,
    ttlMs: TtlMsSchema,
    holder: HolderSchema,
    requestId: RequestIdSchema,
  }),
  settle: z.strictObject({ id: ReservationIdSchema, usd: UsdSchema, tokens: TokensSchema }),
  release: z.strictObject({ id: ReservationIdSchema }),
  get: z.strictObject({ scope: ScopeIdSchema }),
  createScope: z.strictObject({
    scope: ScopeIdSchema,
    parent: ScopeIdSchema,
    limits: BudgetLimitsSchema.optional(),
  }),
  setLimit: z.strictObject({ scope: ScopeIdSchema, limits: BudgetLimitsSchema }),
  removeScope: z.strictObject({ scope: ScopeIdSchema }),
  snapshot: z.strictObject({}),
  /** Reclaims expired reservations; sent by the activation's own timer. */
  sweep: z.strictObject({}),
};
