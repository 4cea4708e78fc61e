/** An amount of budget: money and tokens. */
export interface BudgetAmount {
  /** US dollars. */
  usd: number;
  /** Tokens (prompt + completion). */
  tokens: number;
}

/** What a reservation is made for; passed to {@link BudgetHook.reserve}. */
export interface BudgetReserveContext {
  /** The call's id (shared by its attempts). */
  requestId: string;
  /** Registry name of the model. */
  model: string;
  /** Attempt number, from 1; each attempt reserves anew. */
  attempt: number;
  /** The caller's metadata (agent, job, session, …). @default none */
  metadata?: Readonly<Record<string, string | number | boolean>>;
  /** Aborts when the call is cancelled; a remote ledger should pass it on to its request. */
  signal: AbortSignal;
}

/** A granted reservation. */
export interface BudgetReservation {
  /** Id passed back to {@link BudgetHook.settle} or {@link BudgetHook.release}. */
  reservationId: string;
}

/**
 * The budget ledger as the LLM client sees it (the coordinator's ledger implements it). Every
 * attempt is bracketed: `reserve` the worst case before the request is sent — throwing a
 * `BUDGET_EXHAUSTED` error there stops the call with nothing sent — then exactly one of `settle`
 * (with the actual cost: the provider's usage, or an estimate when a stream failed after tokens
 * were generated) or `release` (the attempt failed before producing anything). Because every
 * concurrent call holds its worst case until it settles, concurrent calls cannot overshoot a cap.
 */
export interface BudgetHook {
  /** Reserves `amount`; throws `BUDGET_EXHAUSTED` when the scope has no room for it. */
  reserve(
    amount: BudgetAmount,
    context: BudgetReserveContext,
  ): Promise<BudgetReservation> | BudgetReservation;
  /** Replaces the reservation with the actual amount spent. */
  settle(reservationId: string, actual: BudgetAmount): Promise<void> | void;
  /** Gives the reservation back: the attempt cost nothing. */
  release(reservationId: string): Promise<void> | void;
}
