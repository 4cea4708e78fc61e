import {
  type BudgetReservation as WireBudgetReservation,
  type BudgetReservationRef,
  type BudgetScope as WireBudgetScope,
  type BudgetScopeRef,
} from '@troupe/proto';
import { type LedgerStates } from '../budget/ledger-state-feed';
import { emptyLedgerState, type LedgerState, snapshot } from '../budget/ledger-state';
import { parseScopeId } from '../budget/scope-id';
import { compareScopes, toWireBudget, wireLedgerPart } from './budget-wire';

/** What a caller passes to {@link watchBudget}. */
export interface WatchBudgetOptions {
  /** Only this scope and the reservations of its subtree; empty = every scope. */
  scope?: string;
  /** Ends the watch. */
  signal: AbortSignal;
  /** Clock for expiries and `atUnixMs` (tests). @default Date.now */
  clock?: () => number;
}

/** One message of a budget watch: the whole view when `snapshot`, else what changed. */
export interface BudgetChange {
  snapshot: boolean;
  /** Scopes that appeared or changed (a snapshot: all), sorted by id then ledger. */
  scopes: WireBudgetScope[];
  removedScopes: BudgetScopeRef[];
  /** Reservations opened (a snapshot: every open one). */
  opened: WireBudgetReservation[];
  closed: BudgetReservationRef[];
  atUnixMs: number;
}

/** What the watch last sent of one ledger: scopes (with their JSON, to compare) and reservations. */
interface SentPart {
  scopes: Map<string, { wire: WireBudgetScope; json: string }>;
  reservations: Map<string, WireBudgetReservation>;
}

/**
 * The budget as a stream (WatchBudget): a snapshot of every ledger's persisted state — the view
 * GetBudget gives, the cluster's ledger and the jobs' own ledgers — with the bucket revision it
 * reached, then each state a ledger commits from the next revision on, turned into what changed
 * for the client: scopes whose numbers moved, reservations opened and closed, scopes removed. A
 * commit that changes nothing the client sees (a read that only moved the inbox cursor) sends
 * nothing. Reservations past their expiry are dropped as GetBudget drops them; the ledger's own
 * sweep commits their removal within its sweep interval, which this watch then sees.
 * @throws TroupeError `INVALID_ARGUMENT` for a malformed `scope`, `NOT_FOUND` for one no ledger
 * holds when the watch starts
 */
export async function* watchBudget(
  states: LedgerStates,
  options: WatchBudgetOptions,
): AsyncGenerator<BudgetChange> {
  const scope = options.scope ?? '';
  const clock = options.clock ?? Date.now;
  if (scope !== '') parseScopeId(scope, 'scope');
  const { ledgers, revisions, revision } = await states.list();
  // The cluster's ledger always exists, committed or not (as when GetBudget asks it).
  if (!ledgers.has('cluster')) ledgers.set('cluster', emptyLedgerState('cluster'));
  const nowMs = clock();
  const roots = [...ledgers.keys()].sort(byRoot);
  const first = toWireBudget(
    roots.map((r) => snapshot(ledgers.get(r) as LedgerState, nowMs).reply),
    scope,
  );
  const sent = new Map<string, SentPart>();
  for (const s of first.scopes ?? [])
    partOf(sent, s.ledger ?? '').scopes.set(s.scope ?? '', entry(s));
  for (const r of first.reservations ?? [])
    partOf(sent, r.ledger ?? '').reservations.set(r.id ?? '', r);
  yield {
    snapshot: true,
    scopes: first.scopes ?? [],
    removedScopes: [],
    opened: first.reservations ?? [],
    closed: [],
    atUnixMs: nowMs,
  };

  for await (const { root, state, revision: at } of states.watch(revision, options.signal)) {
    // A commit the listing already read (made while it ran) is not news.
    if (at <= (revisions.get(root) ?? 0)) continue;
    const now = clock();
    const current = state ?? (root === 'cluster' ? emptyLedgerState('cluster') : undefined);
    const next = current
      ? wireLedgerPart(snapshot(current, now).reply, scope)
      : { scopes: [], reservations: [] };
    const before: SentPart = sent.get(root) ?? { scopes: new Map(), reservations: new Map() };
    const after: SentPart = {
      scopes: new Map(next.scopes.map((s) => [s.scope ?? '', entry(s)])),
      reservations: new Map(next.reservations.map((r) => [r.id ?? '', r])),
    };
    const change: BudgetChange = {
      snapshot: false,
      scopes: [...after.scopes.entries()]
        .filter(([id, s]) => before.scopes.get(id)?.json !== s.json)
        .map(([, s]) => s.wire)
        .sort(compareScopes),
      removedScopes: [...before.scopes.keys()]
        .filter((id) => !after.scopes.has(id))
        .map((id) => ({ ledger: root, scope: id })),
      opened: next.reservations.filter((r) => !before.reservations.has(r.id ?? '')),
      closed: [...before.reservations.keys()]
        .filter((id) => !after.reservations.has(id))
        .map((id) => ({ ledger: root, id })),
      atUnixMs: now,
    };
    if (after.scopes.size === 0 && after.reservations.size === 0) sent.delete(root);
    else sent.set(root, after);
    if (
      change.scopes.length +
        change.removedScopes.length +
        change.opened.length +
        change.closed.length >
      0
    ) {
      yield change;
    }
  }
}

/** The cluster's ledger first, then jobs' own ledgers by root. */
function byRoot(a: string, b: string): number {
  if (a === 'cluster' || b === 'cluster') return a === 'cluster' ? (b === 'cluster' ? 0 : -1) : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function entry(s: WireBudgetScope): { wire: WireBudgetScope; json: string } {
  return { wire: s, json: JSON.stringify(s) };
}

function partOf(parts: Map<string, SentPart>, root: string): SentPart {
  let p = parts.get(root);
  if (!p) {
    p = { scopes: new Map(), reservations: new Map() };
    parts.set(root, p);
  }
  return p;
}
