import {
  type BudgetReservation__Output,
  type BudgetScope__Output,
  type BudgetUpdate__Output,
  type Job__Output,
  type JobsUpdate__Output,
} from '@troupe/proto';
import { type DashboardApi } from './dashboard-api';
import { type BrowserListUpdate } from './list-stream';
import { mapAsync } from './sse';

/** Jobs the budget page knows by name (and whose spec budgets it shows once their scope closed). */
const BUDGET_JOBS = 500;

/** One part of the budget stream and the entries it feeds. */
type Part = 'budget' | 'jobs';

/** The entries (scopes, reservations, jobs) of one message of a part. */
interface PartMessage {
  part: Part;
  snapshot: boolean;
  items: { key: string }[];
  removed: string[];
  nowMs: number;
}

/**
 * The budget page's list (`/api/stream/budget`): WatchBudget and the newest jobs (WatchJobs, for
 * the names of job scopes and the spec budgets of finished jobs whose scope the ledger has folded
 * away) as one list of keyed entries — `type: 'scope' | 'reservation' | 'job'` — so that the page
 * keeps it like any other list (a snapshot replaces it, an update patches it). The first message is
 * a snapshot of both; when either watch reopens after a break, its fresh snapshot is sent as an
 * update that also removes what that part had sent and no longer holds.
 */
export async function* budgetListUpdates(
  api: Pick<DashboardApi, 'watchBudget' | 'watchJobs'>,
  signal: AbortSignal,
): AsyncGenerator<BrowserListUpdate> {
  const parts = merge<PartMessage>([
    mapAsync(api.watchBudget('', { signal }), budgetMessage),
    mapAsync(api.watchJobs({ limit: BUDGET_JOBS }, { signal }), jobsMessage),
  ]);
  const held: Record<Part, Set<string>> = { budget: new Set(), jobs: new Set() };
  const first = new Map<Part, PartMessage>();
  let started = false;
  for await (const m of parts) {
    const keys = held[m.part];
    let removed = m.removed;
    if (m.snapshot) {
      const now = new Set(m.items.map((i) => i.key));
      removed = [...keys].filter((k) => !now.has(k));
      keys.clear();
    }
    for (const k of m.removed) keys.delete(k);
    for (const i of m.items) keys.add(i.key);
    if (started) {
      yield { snapshot: false, items: m.items, removed, nowMs: m.nowMs };
      continue;
    }
    // Until both parts have sent their snapshot, keep the latest state of each.
    const pending = first.get(m.part);
    if (pending && !m.snapshot) {
      const gone = new Set(m.removed);
      const byKey = new Map(pending.items.filter((i) => !gone.has(i.key)).map((i) => [i.key, i]));
      for (const i of m.items) byKey.set(i.key, i);
      first.set(m.part, { ...m, snapshot: true, items: [...byKey.values()], removed: [] });
    } else {
      first.set(m.part, m);
    }
    if (first.size === 2) {
      started = true;
      yield {
        snapshot: true,
        items: [...first.values()].flatMap((p) => p.items),
        removed: [],
        nowMs: m.nowMs,
      };
    }
  }
}

function budgetMessage(u: BudgetUpdate__Output): PartMessage {
  return {
    part: 'budget',
    snapshot: u.snapshot,
    items: [...u.scopes.map(scopeEntry), ...u.opened.map(reservationEntry)],
    removed: [
      ...u.removedScopes.map((s) => scopeKey(s.ledger, s.scope)),
      ...u.closed.map((r) => reservationKey(r.ledger, r.id)),
    ],
    nowMs: Number(u.atUnixMs),
  };
}

function jobsMessage(u: JobsUpdate__Output): PartMessage {
  return {
    part: 'jobs',
    snapshot: u.snapshot,
    items: u.jobs.map(jobEntry),
    removed: u.removedJobIds.map((id) => `job ${id}`),
    nowMs: Number(u.atUnixMs),
  };
}

function scopeKey(ledger: string, scope: string): string {
  return `scope ${ledger} ${scope}`;
}

function reservationKey(ledger: string, id: string): string {
  return `reservation ${ledger} ${id}`;
}

function scopeEntry(s: BudgetScope__Output) {
  return {
    key: scopeKey(s.ledger, s.scope),
    type: 'scope',
    scope: s.scope,
    parent: s.parent,
    ledger: s.ledger,
    limit: s.limit ?? {},
    spent: s.spent ?? { usd: 0, tokens: 0, calls: 0 },
    reserved: s.reserved ?? { usd: 0, tokens: 0, calls: 0 },
    reservations: s.reservations,
    exhausted: s.exhausted,
  };
}

function reservationEntry(r: BudgetReservation__Output) {
  return {
    key: reservationKey(r.ledger, r.id),
    type: 'reservation',
    id: r.id,
    scope: r.scope,
    ledger: r.ledger,
    usd: r.usd,
    tokens: r.tokens,
    holder: r.holder,
    expiresUnixMs: Number(r.expiresUnixMs),
  };
}

/** A job as the budget page needs it: its name, and its spec's budget with what it spent. */
function jobEntry(j: Job__Output) {
  let budget: { usd?: number; tokens?: number } | undefined;
  try {
    budget = (JSON.parse(j.specJson) as { budget?: { usd?: number; tokens?: number } }).budget;
  } catch {
    budget = undefined;
  }
  return {
    key: `job ${j.jobId}`,
    type: 'job',
    jobId: j.jobId,
    name: j.name,
    state: String(j.state),
    budgeted: budget !== undefined,
    limitUsd: budget?.usd ?? null,
    limitTokens: budget?.tokens ?? null,
    spentUsd: j.progress?.costUsd ?? 0,
  };
}

/**
 * The messages of several async iterables as they arrive. Ends when all have ended; the first
 * failure ends it (the others are closed).
 */
async function* merge<T>(sources: AsyncIterable<T>[]): AsyncGenerator<T> {
  const its = sources.map((s) => s[Symbol.asyncIterator]());
  const next = (i: number) => its[i]!.next().then((r) => ({ i, r }));
  const pending = new Map(its.map((_, i) => [i, next(i)]));
  try {
    while (pending.size > 0) {
      const { i, r } = await Promise.race(pending.values());
      if (r.done) {
        pending.delete(i);
        continue;
      }
      pending.set(i, next(i));
      yield r.value;
    }
  } finally {
    // Not awaited: a source blocked on its next message ends when the caller's signal aborts.
    for (const p of pending.values()) p.catch(() => undefined);
    for (const it of its) void it.return?.().catch(() => undefined);
  }
}
