import { type BudgetChange, watchBudget } from '../../src/jobs/budget-watch';
import { type LedgerStates } from '../../src/budget/ledger-state-feed';
import {
  createScope,
  emptyLedgerState,
  type LedgerState,
  release,
  removeScope,
  reserve,
  settle,
} from '../../src/budget/ledger-state';

// watchBudget's diffing over an in-memory feed of committed ledger states (the integration test
// list-watch.int.test.ts drives it from the real state bucket).

const T0 = 1_000_000;

/** Committed states pushed by the test, as the state bucket's watch would deliver them. */
class Feed implements LedgerStates {
  private readonly queue: { root: string; state: LedgerState | undefined; revision: number }[] = [];
  private revision = 7;
  private wake: (() => void) | undefined;
  constructor(private readonly initial: Map<string, LedgerState>) {}
  list() {
    return Promise.resolve({
      ledgers: new Map(this.initial),
      revisions: new Map([...this.initial.keys()].map((r) => [r, 7])),
      revision: 7,
    });
  }
  commit(root: string, state: LedgerState | undefined): void {
    this.queue.push({ root, state, revision: ++this.revision });
    this.wake?.();
  }
  async *watch(afterRevision: number, signal: AbortSignal) {
    expect(afterRevision).toBe(7);
    while (!signal.aborted) {
      const next = this.queue.shift();
      if (next) {
        yield next;
        continue;
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
    }
  }
}

function clusterTree(): LedgerState {
  let s = emptyLedgerState('cluster');
  s = createScope(s, { scope: 'job:j', parent: 'cluster', limits: { usd: 5 } }, T0).state;
  return s;
}

function reserveIn(s: LedgerState, scope: string, requestId: string) {
  const t = reserve(s, { scope, usd: 0.5, tokens: 10, ttlMs: 60_000, holder: 'h', requestId }, T0);
  if (!t.reply.ok) throw new Error('refused');
  return { state: t.state, id: t.reply.id };
}

test('a snapshot, then scopes that changed, reservations opened and closed, scopes removed', async () => {
  let cluster = clusterTree();
  const feed = new Feed(new Map([['cluster', cluster]]));
  const ctl = new AbortController();
  const it = watchBudget(feed, { signal: ctl.signal, clock: () => T0 });
  const next = async (): Promise<BudgetChange> => (await it.next()).value as BudgetChange;

  const first = await next();
  expect(first.snapshot).toBe(true);
  expect(first.scopes.map((s) => [s.ledger, s.scope])).toEqual([
    ['cluster', 'cluster'],
    ['cluster', 'job:j'],
  ]);
  expect(first.opened).toEqual([]);

  const r = reserveIn(cluster, 'job:j', 'a');
  cluster = r.state;
  feed.commit('cluster', cluster);
  const opened = await next();
  expect(opened.snapshot).toBe(false);
  expect(opened.opened.map((x) => [x.ledger, x.id, x.scope])).toEqual([['cluster', r.id, 'job:j']]);
  expect(opened.scopes.map((s) => s.scope)).toEqual(['cluster', 'job:j']);

  // A commit that changes nothing visible (a read moving the inbox cursor) sends nothing: the
  // next message is the settle's.
  feed.commit('cluster', cluster);
  cluster = settle(cluster, r.id, { usd: 0.2, tokens: 5 }, T0).state;
  feed.commit('cluster', cluster);
  const settled = await next();
  expect(settled.closed).toEqual([{ ledger: 'cluster', id: r.id }]);
  expect(settled.scopes.find((s) => s.scope === 'job:j')!.spent).toEqual({
    usd: 0.2,
    tokens: 5,
    calls: 1,
  });

  // A search's scope in the job's own ledger appears, with a reservation of the same id as one
  // of the cluster's (ids are per ledger).
  let own = emptyLedgerState('job:j');
  own = createScope(own, { scope: 'agent:j/s', parent: 'job:j', limits: { usd: 1 } }, T0).state;
  const o = reserveIn(own, 'agent:j/s', 'b');
  own = o.state;
  feed.commit('job:j', own);
  const search = await next();
  expect(search.scopes.map((s) => [s.ledger, s.scope, s.parent])).toEqual([
    ['job:j', 'agent:j/s', 'job:j'],
  ]);
  expect(search.opened.map((x) => [x.ledger, x.id])).toEqual([['job:j', o.id]]);
  own = release(own, o.id, T0).state;
  feed.commit('job:j', own);
  expect((await next()).closed).toEqual([{ ledger: 'job:j', id: o.id }]);

  cluster = removeScope(cluster, 'job:j', T0).state;
  feed.commit('cluster', cluster);
  const removed = await next();
  expect(removed.removedScopes).toEqual([{ ledger: 'cluster', scope: 'job:j' }]);
  feed.commit('job:j', undefined);
  expect((await next()).removedScopes).toEqual([{ ledger: 'job:j', scope: 'agent:j/s' }]);
  ctl.abort();
  expect((await it.next()).done).toBe(true);
});

test('with a scope: only it and its subtree; an unknown scope is NOT_FOUND', async () => {
  let cluster = clusterTree();
  cluster = createScope(cluster, { scope: 'job:k', parent: 'cluster' }, T0).state;
  const feed = new Feed(new Map([['cluster', cluster]]));
  const ctl = new AbortController();
  const it = watchBudget(feed, { scope: 'job:j', signal: ctl.signal, clock: () => T0 });
  const first = (await it.next()).value as BudgetChange;
  expect(first.scopes.map((s) => s.scope)).toEqual(['job:j']);
  const k = reserveIn(cluster, 'job:k', 'k');
  feed.commit('cluster', k.state);
  const j = reserveIn(k.state, 'job:j', 'j');
  feed.commit('cluster', j.state);
  const change = (await it.next()).value as BudgetChange;
  expect(change.opened.map((x) => x.id)).toEqual([j.id]);
  ctl.abort();

  const unknown = watchBudget(feed, { scope: 'job:zzz', signal: new AbortController().signal });
  await expect(unknown.next()).rejects.toMatchObject({ code: 'NOT_FOUND' });
  const bad = watchBudget(feed, { scope: 'not a scope', signal: new AbortController().signal });
  await expect(bad.next()).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
});
