import {
  type BudgetLimits as WireBudgetLimits,
  type BudgetTotals as WireBudgetTotals,
  type GetBudgetResponse,
  TroupeError,
} from '@troupe/proto';
import { type BudgetLimits, type BudgetTotals } from '../budget/budget-amount';
import { type LedgerSnapshot } from '../budget/ledger-state';
import { parseScopeId } from '../budget/scope-id';

/** What GetBudget reads: the cluster's budget ledger (a `BudgetLedger` satisfies it). */
export interface BudgetSource {
  snapshot(options: { signal?: AbortSignal }): Promise<LedgerSnapshot>;
}

/**
 * A ledger snapshot as the wire `GetBudgetResponse`: every scope sorted by id with the open
 * reservations, or, with `scope`, that scope alone and the reservations held in its subtree.
 * @throws TroupeError `INVALID_ARGUMENT` (field `scope`) for a malformed id, `NOT_FOUND` for a
 * scope the ledger does not hold
 */
export function toWireBudget(snap: LedgerSnapshot, scope = ''): GetBudgetResponse {
  const parents = new Map(snap.scopes.map((s) => [s.scope, s.parent]));
  let scopes = snap.scopes;
  let reservations = snap.reservations;
  if (scope !== '') {
    parseScopeId(scope, 'scope');
    scopes = snap.scopes.filter((s) => s.scope === scope);
    if (scopes.length === 0) {
      throw new TroupeError('NOT_FOUND', `budget scope ${scope} does not exist`, {
        details: { field: 'scope', scope },
      });
    }
    reservations = reservations.filter((r) => inSubtree(r.scope, scope, parents));
  }
  return {
    scopes: [...scopes]
      .sort((a, b) => (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0))
      .map((s) => ({
        scope: s.scope,
        parent: s.parent ?? '',
        limit: wireLimits(s.limit),
        spent: wireTotals(s.spent),
        reserved: wireTotals(s.reserved),
        reservations: s.reservations,
        exhausted: s.exhausted,
      })),
    reservations: reservations.map((r) => ({
      id: r.id,
      scope: r.scope,
      usd: r.usd,
      tokens: r.tokens,
      holder: r.holder,
      expiresUnixMs: r.expiresAtMs,
    })),
    atUnixMs: snap.atMs,
  };
}

/** True when `scope` is `root` or lies below it (the chain is a few scopes deep). */
function inSubtree(scope: string, root: string, parents: Map<string, string | null>): boolean {
  let id: string | null | undefined = scope;
  for (let depth = 0; id != null && depth < 64; depth++) {
    if (id === root) return true;
    id = parents.get(id);
  }
  return false;
}

function wireTotals(t: BudgetTotals): WireBudgetTotals {
  return { usd: t.usd, tokens: t.tokens, calls: t.requests };
}

function wireLimits(l: BudgetLimits): WireBudgetLimits {
  return {
    ...(l.usd !== null ? { usd: l.usd } : {}),
    ...(l.tokens !== null ? { tokens: l.tokens } : {}),
    ...(l.requests !== null ? { calls: l.requests } : {}),
  };
}
