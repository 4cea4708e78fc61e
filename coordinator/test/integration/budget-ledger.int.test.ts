import { ActorSystem } from '@troupe/actors';
import { type TroupeError } from '@troupe/proto';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { BudgetLedger } from '../../src/budget/budget-ledger';
import { createBudgetLedgerActor } from '../../src/budget/budget-ledger-actor';
import { checkLedger, type LedgerState, LedgerStateSchema } from '../../src/budget/ledger-state';

// A short sweep interval so that a dead holder's reservation is reclaimed quickly.
const Ledger = createBudgetLedgerActor({ sweepIntervalMs: 50 });

let server: NatsServerHandle;
let cluster: string;
let system: ActorSystem;
let ledger: BudgetLedger;

beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});
beforeEach(async () => {
  cluster = randomClusterName();
  system = await ActorSystem.start({ cluster, servers: server.url, hosting: [Ledger] });
  ledger = new BudgetLedger(system, { definition: Ledger });
});
afterEach(async () => {
  await system.shutdown({ graceMs: 1_000 });
});

async function rejection(p: Promise<unknown>): Promise<TroupeError> {
  try {
    await p;
  } catch (err) {
    return err as TroupeError;
  }
  throw new Error('expected a rejection');
}

async function persisted(sys: ActorSystem, l: BudgetLedger): Promise<LedgerState | undefined> {
  const stored = await sys.states.read(l.address);
  return stored ? LedgerStateSchema.parse(stored.record.data) : undefined;
}

const hold = { ttlMs: 60_000, holder: 'agent/test' };

test('100 concurrent reservations against a limit: exactly floor(limit / amount) succeed', async () => {
  await ledger.setLimit('cluster', { usd: 5 });
  await ledger.createScope('job:j', 'cluster', { usd: 1 });
  // Callers on a second connection too, as agents on other hosts would be.
  const other = await ActorSystem.start({ cluster, servers: server.url });
  try {
    const remote = new BudgetLedger(other, { definition: Ledger });
    const amount = 0.03;
    const results = await Promise.allSettled(
      Array.from({ length: 100 }, (_, i) =>
        (i % 2 === 0 ? ledger : remote).reserve('job:j', { usd: amount, tokens: 10 }, hold),
      ),
    );
    const accepted = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r) => r.status === 'rejected');
    expect(accepted).toHaveLength(Math.floor(1 / amount)); // 33
    expect(accepted.length * amount).toBeLessThanOrEqual(1);
    for (const r of refused) {
      expect(r.reason).toMatchObject({
        code: 'BUDGET_EXHAUSTED',
        retryable: false,
        details: { scope: 'job:j', resource: 'usd', limit: 1, requested: amount },
      });
    }
    const ids = new Set(accepted.map((r) => r.value.id));
    expect(ids.size).toBe(33);
    const job = await ledger.get('job:j');
    expect(job.reserved).toEqual({ usd: 0.99, tokens: 330, requests: 33 });
    expect(job.reservations).toBe(33);
    expect((await ledger.get('cluster')).reserved.usd).toBe(0.99);
    const state = await persisted(system, ledger);
    expect(checkLedger(state!)).toEqual([]);
    expect(state!.counters).toMatchObject({ reserved: 33, refused: 67 });
  } finally {
    await other.shutdown({ graceMs: 500 });
  }
});

test('ancestor limits are enforced: job below cluster, agent subtree below job', async () => {
  await ledger.setLimit('cluster', { usd: 10 });
  await ledger.createScope('job:j', 'cluster', { usd: 2 });
  await ledger.createScope('job:k', 'cluster', { usd: 100 });
  await ledger.createScope('agent:j/root', 'job:j');
  await ledger.createScope('agent:j/sub', 'agent:j/root', { usd: 0.5 });

  expect(
    await rejection(ledger.reserve('agent:j/sub', { usd: 0.6, tokens: 0 }, hold)),
  ).toMatchObject({
    code: 'BUDGET_EXHAUSTED',
    details: { scope: 'agent:j/sub', requestedScope: 'agent:j/sub', limit: 0.5 },
  });
  await ledger.reserve('agent:j/sub', { usd: 0.4, tokens: 0 }, hold);
  expect(
    await rejection(ledger.reserve('agent:j/root', { usd: 1.7, tokens: 0 }, hold)),
  ).toMatchObject({
    code: 'BUDGET_EXHAUSTED',
    details: { scope: 'job:j', limit: 2, spent: 0, reserved: 0.4, requested: 1.7 },
  });
  await ledger.reserve('agent:j/root', { usd: 1.6, tokens: 0 }, hold);
  // job:k's own limit is high, but the cluster has 10 − 2 = 8 left.
  expect(await rejection(ledger.reserve('job:k', { usd: 8.01, tokens: 0 }, hold))).toMatchObject({
    code: 'BUDGET_EXHAUSTED',
    details: { scope: 'cluster', limit: 10, reserved: 2 },
  });
  await ledger.reserve('job:k', { usd: 8, tokens: 0 }, hold);
  const root = await ledger.get('agent:j/root');
  expect(root.reserved.usd).toBe(2);
  expect(root.available.usd).toBe(0);
  expect(root.exhausted).toBe(true);
});

test('settle less returns the remainder; settle more is recorded, exhausts, and refuses', async () => {
  await ledger.createScope('job:j', 'cluster', { usd: 1 });
  const a = await ledger.reserve('job:j', { usd: 0.6, tokens: 1_000 }, hold);
  expect(await ledger.settle(a.id, { usd: 0.2, tokens: 300 })).toMatchObject({
    status: 'settled',
    duplicate: false,
    overspent: [],
  });
  let job = await ledger.get('job:j');
  expect(job.spent).toEqual({ usd: 0.2, tokens: 300, requests: 1 });
  expect(job.reserved.usd).toBe(0);
  expect(job.remaining.usd).toBe(0.8);

  const b = await ledger.reserve('job:j', { usd: 0.8, tokens: 1_000 }, hold);
  // The provider charged more than the worst case we reserved: recorded anyway.
  expect(await ledger.settle(b.id, { usd: 1.5, tokens: 2_000 })).toMatchObject({
    overspent: ['job:j'],
  });
  job = await ledger.get('job:j');
  expect(job.spent.usd).toBe(1.7);
  expect(job.exhausted).toBe(true);
  expect(await rejection(ledger.reserve('job:j', { usd: 0.01, tokens: 1 }, hold))).toMatchObject({
    code: 'BUDGET_EXHAUSTED',
    details: { scope: 'job:j', spent: 1.7, limit: 1 },
  });
  // Settle and release are idempotent.
  expect(await ledger.settle(b.id, { usd: 1.5, tokens: 2_000 })).toMatchObject({ duplicate: true });
  expect(await ledger.release(b.id)).toMatchObject({ status: 'settled', duplicate: true });
  expect((await ledger.get('job:j')).spent.usd).toBe(1.7);
});

test('a holder that dies mid-call has its reservation reclaimed after its TTL', async () => {
  await ledger.createScope('job:j', 'cluster', { usd: 1 });
  const holderProcess = await ActorSystem.start({ cluster, servers: server.url });
  const theirs = new BudgetLedger(holderProcess, { definition: Ledger });
  const r = await theirs.reserve(
    'job:j',
    { usd: 0.9, tokens: 0 },
    {
      ttlMs: 300,
      holder: 'agent/doomed',
    },
  );
  await holderProcess.shutdown({ graceMs: 0 }); // dies without settling
  expect(await rejection(ledger.reserve('job:j', { usd: 0.5, tokens: 0 }, hold))).toMatchObject({
    code: 'BUDGET_EXHAUSTED',
  });
  // The periodic sweep reclaims it with no other traffic: watch the committed state only.
  const state = await waitFor(
    async () => {
      const s = await persisted(system, ledger);
      return s?.counters.expired === 1 ? s : undefined;
    },
    { timeoutMs: 10_000, message: 'expired reservation reclaimed by the sweep' },
  );
  expect(Date.now()).toBeGreaterThanOrEqual(r.expiresAtMs);
  expect(state.open).toEqual({});
  expect((await ledger.get('job:j')).reserved.usd).toBe(0);
  await ledger.reserve('job:j', { usd: 0.5, tokens: 0 }, hold);
  // Its late settle (had it been alive after all) is still charged.
  expect(await ledger.settle(r.id, { usd: 0.3, tokens: 0 })).toMatchObject({ late: true });
  expect((await ledger.get('job:j')).spent.usd).toBe(0.3);
});

test('a retried reserve with the same requestId is not double-counted', async () => {
  await ledger.createScope('job:j', 'cluster', { usd: 1 });
  const first = await ledger.reserve(
    'job:j',
    { usd: 0.4, tokens: 5 },
    {
      ...hold,
      requestId: 'call-7',
    },
  );
  const retries = await Promise.all(
    Array.from({ length: 5 }, () =>
      ledger.reserve('job:j', { usd: 0.4, tokens: 5 }, { ...hold, requestId: 'call-7' }),
    ),
  );
  for (const r of retries) expect(r).toMatchObject({ id: first.id, duplicate: true });
  expect(first.duplicate).toBe(false);
  const job = await ledger.get('job:j');
  expect(job.reserved.usd).toBe(0.4);
  expect(job.reservations).toBe(1);
  expect(
    await rejection(
      ledger.reserve('job:j', { usd: 0.5, tokens: 5 }, { ...hold, requestId: 'call-7' }),
    ),
  ).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'requestId' } });
});

test('state survives an ActorSystem restart on the same cluster', async () => {
  await ledger.setLimit('cluster', { usd: 10, tokens: 100_000 });
  await ledger.createScope('job:j', 'cluster', { usd: 3 });
  await ledger.createScope('agent:j/a', 'job:j');
  const settled = await ledger.reserve('agent:j/a', { usd: 1, tokens: 900 }, hold);
  await ledger.settle(settled.id, { usd: 0.75, tokens: 800 });
  const open = await ledger.reserve(
    'agent:j/a',
    { usd: 0.5, tokens: 100 },
    {
      ...hold,
      requestId: 'kept',
    },
  );
  const before = await ledger.snapshot();

  await system.shutdown({ graceMs: 1_000 });
  system = await ActorSystem.start({ cluster, servers: server.url, hosting: [Ledger] });
  ledger = new BudgetLedger(system, { definition: Ledger });

  const after = await ledger.snapshot();
  expect(after.scopes).toEqual(before.scopes);
  expect(after.counters).toEqual(before.counters);
  expect(await ledger.get('job:j')).toMatchObject({
    limit: { usd: 3 },
    spent: { usd: 0.75, tokens: 800, requests: 1 },
    reserved: { usd: 0.5, tokens: 100, requests: 1 },
    reservations: 1,
  });
  // The open reservation and the request-id memory came across too.
  expect(
    await ledger.reserve('agent:j/a', { usd: 0.5, tokens: 100 }, { ...hold, requestId: 'kept' }),
  ).toMatchObject({ id: open.id, duplicate: true });
  await ledger.settle(open.id, { usd: 0.5, tokens: 100 });
  expect((await ledger.get('cluster')).spent.usd).toBe(1.25);
});

test('a ledger host that crashes loses nothing: another host takes over from the committed state', async () => {
  await ledger.createScope('job:j', 'cluster', { usd: 1 });
  const open = await ledger.reserve('job:j', { usd: 0.25, tokens: 50 }, hold);
  const done = await ledger.reserve('job:j', { usd: 0.25, tokens: 50 }, hold);
  await ledger.settle(done.id, { usd: 0.1, tokens: 20 });
  const crashed = system;
  // No graceful shutdown: the host's connection just goes away, its activation with it.
  await crashed.nc.close();
  system = await ActorSystem.start({ cluster, servers: server.url, hosting: [Ledger] });
  ledger = new BudgetLedger(system, { definition: Ledger });
  expect(await ledger.get('job:j')).toMatchObject({
    spent: { usd: 0.1, tokens: 20, requests: 1 },
    reserved: { usd: 0.25, tokens: 50, requests: 1 },
  });
  // The new activation holds a newer epoch; the open reservation settles there.
  expect(await ledger.settle(open.id, { usd: 0.2, tokens: 40 })).toMatchObject({
    duplicate: false,
  });
  expect((await ledger.get('cluster')).spent.usd).toBe(0.3); // exact: nano-dollar sums
  await crashed.shutdown({ graceMs: 0 }).catch(() => undefined);
});

test('invalid inputs are INVALID_ARGUMENT naming the field', async () => {
  await ledger.createScope('job:j', 'cluster', { usd: 1 });
  const cases: [Promise<unknown>, string][] = [
    [ledger.reserve('job:j', { usd: -1, tokens: 0 }, hold), 'amount.usd'],
    [ledger.reserve('job:j', { usd: 1, tokens: -5 }, hold), 'amount.tokens'],
    [ledger.reserve('job:j', { usd: 1, tokens: 1.5 }, hold), 'amount.tokens'],
    [ledger.reserve('job:j', { usd: Number.NaN, tokens: 0 }, hold), 'amount.usd'],
    [ledger.reserve('job:j', { usd: 1, tokens: 0 }, { ...hold, ttlMs: 0 }), 'ttlMs'],
    [ledger.reserve('job:j', { usd: 1, tokens: 0 }, { ...hold, holder: '' }), 'holder'],
    [ledger.reserve('job:nope', { usd: 0.1, tokens: 0 }, hold), 'scope'],
    [ledger.reserve('job:bad id', { usd: 0.1, tokens: 0 }, hold), 'scope'],
    [ledger.reserve('jobs/j', { usd: 0.1, tokens: 0 }, hold), 'scope'],
    [ledger.get('agent:j/ghost'), 'scope'],
    [ledger.createScope('agent:j/a', 'job:nope'), 'parent'],
    [ledger.createScope('agent:j/a', 'cluster'), 'parent'],
    [ledger.createScope('job:k', 'cluster', { usd: -3 }), 'limits.usd'],
    [ledger.setLimit('job:j', { dollars: 3 } as never), 'limits'],
    [ledger.settle('r1', { usd: -0.5, tokens: 0 }), 'actual.usd'],
    [ledger.settle('not-an-id', { usd: 0.5, tokens: 0 }), 'id'],
  ];
  for (const [call, field] of cases) {
    const err = await rejection(call);
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toContain(field);
  }
  // The actor validates its own boundary too, for callers that skip the client.
  const raw = system.refOf(ledger.address);
  const err = await rejection(
    raw.ask('reserve', {
      scope: 'job:j',
      usd: -1,
      tokens: 0,
      ttlMs: 1_000,
      holder: 'x',
      requestId: 'raw-1',
    }),
  );
  expect(err).toMatchObject({ code: 'INVALID_ARGUMENT' });
  expect(err.message).toContain('reserve.usd');
  // And the ledger keeps serving, with nothing held by the bad calls.
  expect((await ledger.get('job:j')).reservations).toBe(0);
});

test('a job-rooted ledger is its own tree; scopes of other jobs are refused', async () => {
  const solo = new BudgetLedger(system, { root: 'job:solo', definition: Ledger });
  await solo.setLimit('job:solo', { usd: 2 });
  await solo.createScope('agent:solo/a', 'job:solo', { tokens: 10 });
  await solo.reserve('agent:solo/a', { usd: 1, tokens: 10 }, hold);
  expect(await rejection(solo.reserve('agent:solo/a', { usd: 0, tokens: 1 }, hold))).toMatchObject({
    code: 'BUDGET_EXHAUSTED',
    details: { resource: 'tokens' },
  });
  expect(await rejection(solo.get('agent:other/a'))).toMatchObject({
    code: 'INVALID_ARGUMENT',
    details: { field: 'scope' },
  });
  expect(solo.address).toEqual({ kind: 'budget-ledger', id: 'job-solo' });
  // Independent of the cluster tree.
  expect((await ledger.get('cluster')).reservations).toBe(0);
  const snap = await solo.snapshot();
  expect(snap.root).toBe('job:solo');
  expect(snap.scopes.map((s) => s.scope)).toEqual(['job:solo', 'agent:solo/a']);
});
