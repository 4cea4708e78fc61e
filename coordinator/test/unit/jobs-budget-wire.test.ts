import { type TroupeError } from '@troupe/proto';
import {
  createScope,
  emptyLedgerState,
  type LedgerState,
  reserve,
  setLimit,
  settle,
  snapshot,
} from '../../src/budget/ledger-state';
import { toWireBudget } from '../../src/jobs/budget-wire';

const T0 = 1_000_000;

/** cluster (usd 10) → job:j (usd 5, 100 calls) → agent:j/a; job:k unlimited. */
function tree(): LedgerState {
  let s = emptyLedgerState('cluster');
  s = setLimit(s, 'cluster', { usd: 10 }, T0).state;
  s = createScope(
    s,
    { scope: 'job:j', parent: 'cluster', limits: { usd: 5, requests: 100 } },
    T0,
  ).state;
  s = createScope(s, { scope: 'agent:j/a', parent: 'job:j' }, T0).state;
  s = createScope(s, { scope: 'job:k', parent: 'cluster' }, T0).state;
  return s;
}

function held(s: LedgerState, scope: string, usd: number, holder: string) {
  const t = reserve(
    s,
    { scope, usd, tokens: 100, ttlMs: 60_000, holder, requestId: `${holder}-${scope}` },
    T0,
  );
  if (!t.reply.ok) throw new Error('refused');
  return { state: t.state, id: t.reply.id };
}

test('every scope sorted, limits as optional fields, reservations oldest first', () => {
  let s = tree();
  const a = held(s, 'agent:j/a', 0.5, 'agent-1');
  s = a.state;
  const b = held(s, 'job:k', 0.25, 'agent-2');
  s = b.state;
  const wire = toWireBudget(snapshot(s, T0 + 10).reply);
  expect(wire.atUnixMs).toBe(T0 + 10);
  expect(wire.scopes!.map((x) => x.scope)).toEqual(['agent:j/a', 'cluster', 'job:j', 'job:k']);
  const job = wire.scopes!.find((x) => x.scope === 'job:j')!;
  expect(job).toMatchObject({
    parent: 'cluster',
    limit: { usd: 5, calls: 100 },
    reserved: { usd: 0.5, tokens: 100, calls: 1 },
    spent: { usd: 0, tokens: 0, calls: 0 },
    reservations: 1,
    exhausted: false,
  });
  expect(job.limit).not.toHaveProperty('tokens'); // unlimited: absent
  expect(wire.scopes!.find((x) => x.scope === 'cluster')!.parent).toBe('');
  expect(wire.reservations).toEqual([
    {
      id: a.id,
      scope: 'agent:j/a',
      usd: 0.5,
      tokens: 100,
      holder: 'agent-1',
      expiresUnixMs: T0 + 60_000,
      ledger: 'cluster',
    },
    {
      id: b.id,
      scope: 'job:k',
      usd: 0.25,
      tokens: 100,
      holder: 'agent-2',
      expiresUnixMs: T0 + 60_000,
      ledger: 'cluster',
    },
  ]);
});

test('one scope: that scope and the reservations of its subtree; settled ones are gone', () => {
  let s = tree();
  const a = held(s, 'agent:j/a', 0.5, 'agent-1');
  s = a.state;
  s = held(s, 'job:k', 0.25, 'agent-2').state;
  const wire = toWireBudget(snapshot(s, T0).reply, 'job:j');
  expect(wire.scopes!.map((x) => x.scope)).toEqual(['job:j']);
  expect(wire.reservations!.map((r) => r.id)).toEqual([a.id]);
  s = settle(s, a.id, { usd: 0.1, tokens: 40 }, T0).state;
  const after = toWireBudget(snapshot(s, T0).reply, 'job:j');
  expect(after.reservations).toEqual([]);
  expect(after.scopes![0]!.spent).toEqual({ usd: 0.1, tokens: 40, calls: 1 });
});

test('a malformed scope names the field; an unknown one is NOT_FOUND', () => {
  const snap = snapshot(tree(), T0).reply;
  const bad = (() => {
    try {
      toWireBudget(snap, 'bogus scope');
    } catch (err) {
      return err as TroupeError;
    }
    throw new Error('expected a throw');
  })();
  expect(bad.code).toBe('INVALID_ARGUMENT');
  expect(bad.details).toMatchObject({ field: 'scope' });
  expect(() => toWireBudget(snap, 'job:zzz')).toThrow(/does not exist/);
});

/** A job's own ledger (root `job:j`) holding a search's scope, as `openSearchBudgetScope` makes. */
function searchLedger(): LedgerState {
  let s = emptyLedgerState('job:j');
  s = createScope(s, { scope: 'agent:j/search-1', parent: 'job:j', limits: { usd: 2 } }, T0).state;
  return s;
}

test("a job's own ledger lists its searches' scopes (not its root) under the job", () => {
  let own = searchLedger();
  const r = held(own, 'agent:j/search-1', 0.3, 'island-0');
  own = r.state;
  let cluster = tree();
  cluster = held(cluster, 'job:j', 0.3, 'island-0').state;
  const wire = toWireBudget([snapshot(cluster, T0).reply, snapshot(own, T0).reply]);
  const search = wire.scopes!.filter((x) => x.ledger === 'job:j');
  expect(search).toEqual([
    expect.objectContaining({
      scope: 'agent:j/search-1',
      parent: 'job:j',
      limit: { usd: 2 },
      reserved: { usd: 0.3, tokens: 100, calls: 1 },
    }),
  ]);
  // The cluster's `job:j` scope is listed once, from the cluster's ledger.
  expect(wire.scopes!.filter((x) => x.scope === 'job:j').map((x) => x.ledger)).toEqual(['cluster']);
  // The same call holds a reservation in each ledger; ids are unique per ledger only.
  expect(wire.reservations!.map((x) => [x.ledger, x.id])).toEqual([
    ['cluster', 'r1'],
    ['job:j', r.id],
  ]);
  // The job's subtree covers the search's reservation; the search scope alone is found.
  const job = toWireBudget([snapshot(cluster, T0).reply, snapshot(own, T0).reply], 'job:j');
  expect(job.reservations!.map((x) => x.ledger)).toEqual(['cluster', 'job:j']);
  const one = toWireBudget(
    [snapshot(cluster, T0).reply, snapshot(own, T0).reply],
    'agent:j/search-1',
  );
  expect(one.scopes!.map((x) => [x.ledger, x.scope])).toEqual([['job:j', 'agent:j/search-1']]);
});
