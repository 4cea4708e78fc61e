import {
  openSearchBudgetScope,
  registerBuiltinDrivers,
  searchLedgerRoot,
} from '@troupe/benchmarks';
import { BudgetLedger, DriverRegistry } from '@troupe/coordinator';
import {
  type BudgetReservation__Output,
  type BudgetScope__Output,
  type BudgetUpdate__Output,
  type TroupeError,
} from '@troupe/proto';
import { TestCluster } from '@troupe/test-cluster';
import { waitFor } from '@troupe/testkit';
import { type TroupeClient } from '../../src/troupe-client';

// WatchBudget end to end: the SDK over gRPC against a real coordinator whose budget ledgers (real
// `budget-ledger` actors persisting to the state bucket of a real nats-server) take reservations
// made through `BudgetLedger`, the client every model call's budget hook uses.

let tc: TestCluster;

beforeAll(async () => {
  tc = await TestCluster.start({
    jobApi: true,
    actors: true,
    coordinator: { drivers: () => registerBuiltinDrivers(new DriverRegistry()) },
  });
});
afterAll(async () => {
  await tc?.stop();
});

/** The budget as a WatchBudget consumer holds it: every message applied in order. */
interface BudgetView {
  scopes: Map<string, BudgetScope__Output>;
  reservations: Map<string, BudgetReservation__Output>;
  snapshots: number;
  removedScopes: string[];
  closed: string[];
  error?: TroupeError;
  stop: () => void;
}

const scopeKey = (ledger: string, scope: string) => `${ledger} ${scope}`;

function follow(
  client: TroupeClient,
  scope = '',
  open?: (signal: AbortSignal) => AsyncIterable<BudgetUpdate__Output>,
): BudgetView {
  const ctl = new AbortController();
  const view: BudgetView = {
    scopes: new Map(),
    reservations: new Map(),
    snapshots: 0,
    removedScopes: [],
    closed: [],
    stop: () => ctl.abort(),
  };
  void (async () => {
    const updates = open ? open(ctl.signal) : client.watchBudget(scope, { signal: ctl.signal });
    for await (const u of updates) {
      if (u.snapshot) {
        view.snapshots++;
        view.scopes.clear();
        view.reservations.clear();
      }
      for (const s of u.removedScopes) {
        view.scopes.delete(scopeKey(s.ledger, s.scope));
        view.removedScopes.push(scopeKey(s.ledger, s.scope));
      }
      for (const r of u.closed) {
        view.reservations.delete(scopeKey(r.ledger, r.id));
        view.closed.push(scopeKey(r.ledger, r.id));
      }
      for (const s of u.scopes) view.scopes.set(scopeKey(s.ledger, s.scope), s);
      for (const r of u.opened) view.reservations.set(scopeKey(r.ledger, r.id), r);
    }
  })().catch((err: unknown) => (view.error = err as TroupeError));
  return view;
}

test('WatchBudget: a snapshot, then a reservation opening and settling, then a removed scope', async () => {
  const client = tc.client();
  const ledger = new BudgetLedger(tc.actors);
  const jobScope = `job:bw-${tc.cluster.slice(-6)}`;
  await ledger.createScope(jobScope, 'cluster', { usd: 5 });
  const all = follow(client);
  const one = follow(client, jobScope);
  try {
    await waitFor(() => all.snapshots === 1 && one.snapshots === 1, {
      timeoutMs: 30_000,
      message: 'the snapshots',
    });
    expect(all.scopes.get(scopeKey('cluster', jobScope))).toMatchObject({
      parent: 'cluster',
      limit: { usd: 5 },
      reservations: 0,
    });
    expect([...one.scopes.keys()]).toEqual([scopeKey('cluster', jobScope)]);

    const r = await ledger.reserve(
      jobScope,
      { usd: 0.5, tokens: 100 },
      { ttlMs: 120_000, holder: 'budget-watch-test' },
    );
    const key = scopeKey('cluster', r.id);
    for (const view of [all, one]) {
      const held = await waitFor(() => view.reservations.get(key), {
        timeoutMs: 30_000,
        message: 'the reservation opened in the watched budget',
      });
      expect(held).toMatchObject({ scope: jobScope, usd: 0.5, holder: 'budget-watch-test' });
      await waitFor(() => view.scopes.get(scopeKey('cluster', jobScope))?.reserved?.usd === 0.5, {
        timeoutMs: 30_000,
        message: 'the held amount in the scope',
      });
    }

    await ledger.settle(r.id, { usd: 0.2, tokens: 40 });
    for (const view of [all, one]) {
      await waitFor(() => view.closed.includes(key), {
        timeoutMs: 30_000,
        message: 'the settled reservation closed in the watched budget',
      });
      expect(view.reservations.has(key)).toBe(false);
      await waitFor(() => view.scopes.get(scopeKey('cluster', jobScope))?.spent?.usd === 0.2, {
        timeoutMs: 30_000,
        message: 'the settled cost in the scope',
      });
      expect(view.scopes.get(scopeKey('cluster', jobScope))!.reserved!.usd).toBe(0);
    }

    await ledger.removeScope(jobScope);
    await waitFor(() => all.removedScopes.includes(scopeKey('cluster', jobScope)), {
      timeoutMs: 30_000,
      message: 'the removed scope left the watched budget',
    });
    expect(all.snapshots).toBe(1);
    expect(all.error).toBeUndefined();
    expect(one.error).toBeUndefined();
  } finally {
    all.stop();
    one.stop();
  }
});

test("a search's scopes, in its job's own ledger, are listed under the job by GetBudget and WatchBudget", async () => {
  const client = tc.client();
  const jobId = `bws-${tc.cluster.slice(-6)}`;
  const jobScope = `job:${jobId}`;
  await new BudgetLedger(tc.actors).createScope(jobScope, 'cluster', { usd: 5 });
  const view = follow(client);
  try {
    await waitFor(() => view.snapshots === 1, { timeoutMs: 30_000, message: 'the snapshot' });
    // What the evolve driver does when a search has `maxCostUsd`.
    const scope = await openSearchBudgetScope(tc.actors, jobId, 'search-1', 1.5);
    const root = searchLedgerRoot(scope);
    expect(root).toBe(jobScope);
    const listed = await waitFor(() => view.scopes.get(scopeKey(root, scope)), {
      timeoutMs: 30_000,
      message: "the search's scope in the watched budget",
    });
    expect(listed).toMatchObject({ parent: jobScope, ledger: root, limit: { usd: 1.5 } });
    // The root of the job's own ledger is not listed: the job's scope is the cluster ledger's.
    expect(view.scopes.has(scopeKey(root, root))).toBe(false);

    const own = new BudgetLedger(tc.actors, { root });
    const r = await own.reserve(
      scope,
      { usd: 0.25, tokens: 10 },
      { ttlMs: 120_000, holder: 'island-0' },
    );
    await waitFor(() => view.reservations.get(scopeKey(root, r.id)), {
      timeoutMs: 30_000,
      message: "the search's reservation in the watched budget",
    });

    const budget = await client.getBudget();
    expect(budget.scopes.filter((s) => s.scope === scope)).toEqual([
      expect.objectContaining({ ledger: root, parent: jobScope }),
    ]);
    expect(budget.scopes.filter((s) => s.scope === jobScope).map((s) => s.ledger)).toEqual([
      'cluster',
    ]);
    expect(budget.reservations).toContainEqual(
      expect.objectContaining({ ledger: root, id: r.id, scope }),
    );
    // The job's subtree covers its search's reservation; the search's scope alone is found.
    expect((await client.getBudget(jobScope)).reservations.map((x) => x.id)).toContain(r.id);
    expect((await client.getBudget(scope)).scopes.map((s) => [s.ledger, s.scope])).toEqual([
      [root, scope],
    ]);

    await own.release(r.id);
    await waitFor(() => view.closed.includes(scopeKey(root, r.id)), {
      timeoutMs: 30_000,
      message: "the search's released reservation closed",
    });
    expect(view.error).toBeUndefined();
  } finally {
    view.stop();
  }
});

test('WatchBudget refuses unauthenticated or wrongly authenticated calls and unknown scopes', async () => {
  const first = async <T>(iter: AsyncIterable<T>) => {
    for await (const m of iter) return m;
    return undefined;
  };
  for (const token of ['', 'x'.repeat(48)]) {
    await expect(first(tc.client({ token }).watchBudget())).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
  }
  await expect(first(tc.client().watchBudget('job:no-such-job'))).rejects.toMatchObject({
    code: 'NOT_FOUND',
  });
  await expect(first(tc.client().watchBudget('not a scope'))).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
  });
  const snapshot = await first(tc.client().watchBudget());
  expect(snapshot?.snapshot).toBe(true);
  expect(snapshot?.scopes.map((s) => s.scope)).toContain('cluster');
});
