import { invalidArgument } from '@troupe/proto';
import { type BudgetAmount } from './budget-amount';
import { type BudgetLedger } from './budget-ledger';

/** What a caller passes to {@link LedgerBudgetHook}. */
export interface LedgerBudgetHookOptions {
  /** The ledger of the cluster's budget tree. */
  ledger: BudgetLedger;
  /**
   * Scope a call is charged to when its metadata names none (`job:<id>`, `agent:<id>`, or
   * `cluster`). A call whose metadata carries `budgetScope` (an agent run started for a job) is
   * charged there instead.
   */
  scope: string;
  /** Who holds the reservations (a session id or actor address), for diagnostics. */
  holder: string;
  /**
   * Life of a reservation whose holder never settles it (it died mid-call): the ledger reclaims
   * it after this. Choose more than a model call's own timeout. @default 600000 (10 minutes)
   */
  ttlMs?: number;
}

/** What the LLM client passes to `reserve` (structurally the agents' `BudgetReserveContext`). */
export interface LedgerReserveContext {
  /** The call's id, shared by its attempts. */
  requestId: string;
  /** Attempt number, from 1; each attempt reserves anew. */
  attempt: number;
  /** The caller's metadata; a string `budgetScope` overrides the hook's scope. */
  metadata?: Readonly<Record<string, string | number | boolean>>;
  /** Aborts when the call is cancelled. */
  signal?: AbortSignal;
}

/**
 * The coordinator's {@link BudgetLedger} as the LLM client's budget hook: every model-call
 * attempt reserves its worst case in `scope` before it is sent (a `BUDGET_EXHAUSTED` refusal means
 * nothing is sent), then settles with the provider's usage or releases. The hook is structurally
 * the `BudgetHook` of `@troupe/llm` (this package does not depend on that one). Reserves are
 * idempotent per attempt (`<requestId>:<attempt>`), so a reserve retried after a lost reply never
 * holds the amount twice.
 */
export class LedgerBudgetHook {
  private readonly ledger: BudgetLedger;
  private readonly scope: string;
  private readonly holder: string;
  private readonly ttlMs: number;

  /** @throws TroupeError `INVALID_ARGUMENT` naming `ttlMs` */
  constructor(options: LedgerBudgetHookOptions) {
    const ttlMs = options.ttlMs ?? 600_000;
    if (!Number.isInteger(ttlMs) || ttlMs <= 0) {
      throw invalidArgument('ttlMs', 'must be a positive integer', options.ttlMs);
    }
    this.ledger = options.ledger;
    this.scope = options.scope;
    this.holder = options.holder;
    this.ttlMs = ttlMs;
  }

  /** Reserves `amount`; throws `BUDGET_EXHAUSTED` naming the scope that has no room. */
  async reserve(
    amount: BudgetAmount,
    context: LedgerReserveContext,
  ): Promise<{ reservationId: string }> {
    const named = context.metadata?.['budgetScope'];
    const scope = typeof named === 'string' && named !== '' ? named : this.scope;
    const r = await this.ledger.reserve(scope, amount, {
      ttlMs: this.ttlMs,
      holder: this.holder,
      requestId: `${context.requestId}:${context.attempt}`,
      ...(context.signal ? { signal: context.signal } : {}),
    });
    return { reservationId: r.id };
  }

  /** Replaces the reservation with what the call cost. */
  async settle(reservationId: string, actual: BudgetAmount): Promise<void> {
    await this.ledger.settle(reservationId, actual);
  }

  /** Gives the reservation back: the attempt cost nothing. */
  async release(reservationId: string): Promise<void> {
    await this.ledger.release(reservationId);
  }
}
