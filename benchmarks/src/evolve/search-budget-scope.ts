import { type RefFactory } from '@troupe/actors';
import { BudgetLedger } from '@troupe/coordinator';

/**
 * The ledger scope of a search's model spend: `agent:<jobId>/<searchId>` in the job's own ledger
 * (root `job:<jobId>`, an actor of its own, so the cluster's tree and the job's spec budget are
 * untouched; calls reserve there and in the job's scope).
 */
export function searchBudgetScope(jobId: string, searchId: string): string {
  return `agent:${jobId}/${searchId}`;
}

/** The root of the ledger holding a {@link searchBudgetScope}: `job:<jobId>`. */
export function searchLedgerRoot(scope: string): string {
  return `job:${scope.slice('agent:'.length, scope.indexOf('/'))}`;
}

/**
 * Opens the search's scope with limit `maxCostUsd` (idempotent: a resumed search keeps its
 * spending there, so the limit holds across executions) and returns its id.
 */
export async function openSearchBudgetScope(
  refs: RefFactory,
  jobId: string,
  searchId: string,
  maxCostUsd: number,
  signal?: AbortSignal,
): Promise<string> {
  const scope = searchBudgetScope(jobId, searchId);
  const root = searchLedgerRoot(scope);
  await new BudgetLedger(refs, { root }).createScope(
    scope,
    root,
    { usd: maxCostUsd },
    signal ? { signal } : {},
  );
  return scope;
}
