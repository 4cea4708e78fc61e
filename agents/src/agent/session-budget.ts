import { randomUUID } from 'node:crypto';
import { ErrorCode, TroupeError } from '@troupe/proto';
import type {
  BudgetAmount,
  BudgetHook,
  BudgetReservation,
  BudgetReserveContext,
} from '@troupe/llm';

// Float sums of prices drift by ~1e-17; a call that fits the cap exactly must not be refused.
const USD_EPSILON = 1e-9;

/**
 * A run's own cost cap in front of the cluster's ledger: `reserve` refuses with
 * `BUDGET_EXHAUSTED` when `spent + held + worst case` would pass `maxCostUsd` — so no call that
 * could pass the cap is sent — and otherwise forwards to the injected ledger (if any), which may
 * refuse too.
 */
export class SessionBudget implements BudgetHook {
  private held = new Map<string, { usd: number; outer?: string }>();
  private heldUsd = 0;

  /**
   * @param spentUsd - what the run has spent so far (from its state)
   * @param maxCostUsd - the cap; undefined for none
   * @param outer - the cluster ledger
   */
  constructor(
    private spentUsd: number,
    private readonly maxCostUsd: number | undefined,
    private readonly outer: BudgetHook | undefined,
  ) {}

  /** USD settled through this budget since it was created, plus what it started with. */
  get spent(): number {
    return this.spentUsd;
  }

  async reserve(amount: BudgetAmount, context: BudgetReserveContext): Promise<BudgetReservation> {
    if (
      this.maxCostUsd !== undefined &&
      this.spentUsd + this.heldUsd + amount.usd > this.maxCostUsd + USD_EPSILON
    ) {
      throw new TroupeError(
        ErrorCode.BUDGET_EXHAUSTED,
        `run budget: the next call may cost up to $${amount.usd.toFixed(6)}, spent $${this.spentUsd.toFixed(6)} of limits.maxCostUsd $${this.maxCostUsd}`,
        { details: { scope: 'run', spentUsd: this.spentUsd, limitUsd: this.maxCostUsd } },
      );
    }
    const outer = this.outer
      ? (await this.outer.reserve(amount, context)).reservationId
      : undefined;
    const id = randomUUID();
    this.held.set(id, { usd: amount.usd, ...(outer !== undefined ? { outer } : {}) });
    this.heldUsd += amount.usd;
    return { reservationId: id };
  }

  async settle(reservationId: string, actual: BudgetAmount): Promise<void> {
    const h = this.take(reservationId);
    this.spentUsd += actual.usd;
    if (h?.outer !== undefined) await this.outer?.settle(h.outer, actual);
  }

  async release(reservationId: string): Promise<void> {
    const h = this.take(reservationId);
    if (h?.outer !== undefined) await this.outer?.release(h.outer);
  }

  private take(id: string): { usd: number; outer?: string } | undefined {
    const h = this.held.get(id);
    if (h) {
      this.held.delete(id);
      this.heldUsd -= h.usd;
    }
    return h;
  }
}
