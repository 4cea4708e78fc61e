import {
  type BudgetLimits as WireBudgetLimits,
  type BudgetReservation as WireBudgetReservation,
  type BudgetScope as WireBudgetScope,
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

/** One ledger's part of a budget listing (see {@link wireLedgerPart}). */
export interface WireLedgerPart {
  scopes: WireBudgetScope[];
  reservations: WireBudgetReservation[];
}

/**
 * A ledger snapshot as wire scopes and reservations, each carrying the ledger's root: every scope
 * of the cluster's ledger; of a job's own ledger (root `job:<jobId>`, a search's scopes) every
 * scope but the root, which only adds up its searches and would repeat the id of the job's scope
 * in the cluster's ledger. With `scope`, only that scope and the reservations of its subtree
 * (under `cluster`, every ledger's reservations: a job's own ledger hangs under its job).
 */
export function wireLedgerPart(snap: LedgerSnapshot, scope = ''): WireLedgerPart {
  const ledger = snap.root;
  const parents = new Map(snap.scopes.map((s) => [s.scope, s.parent]));
  const ownLedger = ledger !== 'cluster';
  let scopes = ownLedger ? snap.scopes.filter((s) => s.scope !== ledger) : snap.scopes;
  let reservations = snap.reservations;
  if (scope !== '') {
    scopes = scopes.filter((s) => s.scope === scope);
    reservations =
      ownLedger && scope === 'cluster'
        ? reservations
        : reservations.filter((r) => inSubtree(r.scope, scope, parents));
  }
  return {
    scopes: scopes.map((s) => ({
      scope: s.scope,
      parent: s.parent ?? '',
      limit: wireLimits(s.limit),
      spent: wireTotals(s.spent),
      reserved: wireTotals(s.reserved),
      reservations: s.reservations,
      exhausted: s.exhausted,
      ledger,
    })),
    reservations: reservations.map((r) => ({
      id: r.id,
      scope: r.scope,
      usd: r.usd,
      tokens: r.tokens,
      holder: r.holder,
      expiresUnixMs: r.expiresAtMs,
      ledger,
    })),
  };
}

/**
 * Ledger snapshots as the wire `GetBudgetResponse`: the cluster's ledger and any jobs' own ledgers
 * (see {@link wireLedgerPart}), scopes sorted by id then ledger, reservations ledger by ledger in
 * the order given (oldest first within each); with `scope`, that scope alone and the reservations
 * held in its subtree.
 * @throws TroupeError `INVALID_ARGUMENT` (field `scope`) for a malformed id, `NOT_FOUND` for a
 * scope no ledger holds
 */
export function toWireBudget(
  snaps: LedgerSnapshot | readonly LedgerSnapshot[],
  scope = '',
): GetBudgetResponse {
  const all = Array.isArray(snaps)
    ? (snaps as readonly LedgerSnapshot[])
    : [snaps as LedgerSnapshot];
  if (scope !== '') parseScopeId(scope, 'scope');
  const parts = all.map((s) => wireLedgerPart(s, scope));
  const scopes = parts.flatMap((p) => p.scopes).sort(compareScopes);
  if (scope !== '' && scopes.length === 0) throw unknownScope(scope);
  return {
    scopes,
    reservations: parts.flatMap((p) => p.reservations),
    atUnixMs: all[0]?.atMs ?? Date.now(),
  };
}

/** The `NOT_FOUND` of a scope no ledger holds. */
export function unknownScope(scope: string): TroupeError {
  return new TroupeError('NOT_FOUND', `budget scope ${scope} does not exist`, {
    details: { field: 'scope', scope },
  });
}

/** The order of listed scopes: by id, then by ledger. */
export function compareScopes(a: WireBudgetScope, b: WireBudgetScope): number {
  const x = a.scope ?? '';
  const y = b.scope ?? '';
  if (x !== y) return x < y ? -1 : 1;
  const l = a.ledger ?? '';
  const m = b.ledger ?? '';
  return l < m ? -1 : l > m ? 1 : 0;
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
