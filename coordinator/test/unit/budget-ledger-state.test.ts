import { type TroupeError } from '@troupe/proto';
import {
  checkLedger,
  createScope,
  emptyLedgerState,
  expireDue,
  getScope,
  type LedgerConfig,
  type LedgerState,
  LedgerStateSchema,
  release,
  removeScope,
  reserve,
  type ReserveInput,
  setLimit,
  settle,
  snapshot,
} from '../../src/budget/ledger-state';

const T0 = 1_000_000;

function req(scope: string, usd: number, extra: Partial<ReserveInput> = {}): ReserveInput {
  return {
    scope,
    usd,
    tokens: 0,
    ttlMs: 60_000,
    holder: 'test',
    requestId: `q-${Math.random()}`,
    ...extra,
  };
}

/** cluster (usd 10) → job:j (usd 5) → agent:j/a (unlimited) → agent:j/sub (usd 1). */
function tree(): LedgerState {
  let s = emptyLedgerState('cluster');
  s = setLimit(s, 'cluster', { usd: 10 }, T0).state;
  s = createScope(s, { scope: 'job:j', parent: 'cluster', limits: { usd: 5 } }, T0).state;
  s = createScope(s, { scope: 'agent:j/a', parent: 'job:j' }, T0).state;
  s = createScope(s, { scope: 'agent:j/sub', parent: 'agent:j/a', limits: { usd: 1 } }, T0).state;
  return s;
}

function ok(t: { reply: { ok: boolean } }): {
  id: string;
  expiresAtMs: number;
  duplicate: boolean;
} {
  if (!t.reply.ok) throw new Error(`refused: ${JSON.stringify(t.reply)}`);
  return t.reply as unknown as { id: string; expiresAtMs: number; duplicate: boolean };
}

function thrown(fn: () => unknown): TroupeError {
  try {
    fn();
  } catch (err) {
    return err as TroupeError;
  }
  throw new Error('expected a throw');
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

test('a new ledger has only its unlimited root', () => {
  const s = emptyLedgerState('cluster');
  const usage = getScope(s, 'cluster', T0).reply;
  expect(usage).toMatchObject({
    scope: 'cluster',
    parent: null,
    limit: { usd: null, tokens: null, requests: null },
    spent: { usd: 0, tokens: 0, requests: 0 },
    reservations: 0,
    exhausted: false,
  });
  expect(LedgerStateSchema.parse(s)).toEqual(s);
});

test('a reservation is held in its scope and every ancestor; get reports the subtree rollup', () => {
  let s = tree();
  s = reserve(s, req('agent:j/sub', 0.25, { tokens: 100 }), T0).state;
  s = reserve(s, req('agent:j/a', 0.5), T0).state;
  expect(getScope(s, 'agent:j/sub', T0).reply.reserved).toEqual({
    usd: 0.25,
    tokens: 100,
    requests: 1,
  });
  const job = getScope(s, 'job:j', T0).reply;
  expect(job.reserved).toEqual({ usd: 0.75, tokens: 100, requests: 2 });
  expect(job.reservations).toBe(2);
  expect(job.remaining.usd).toBe(4.25);
  expect(getScope(s, 'cluster', T0).reply.reservations).toBe(2);
  expect(getScope(s, 'agent:j/sub', T0).reply.available.usd).toBe(0.75);
  expect(checkLedger(s)).toEqual([]);
});

test('the nearest scope that would overflow is named, with its numbers', () => {
  let s = tree();
  s = reserve(s, req('agent:j/a', 4.5), T0).state;
  const refused = reserve(s, req('agent:j/a', 0.75), T0);
  expect(refused.reply).toEqual({
    ok: false,
    exhausted: {
      requestedScope: 'agent:j/a',
      scope: 'job:j',
      resource: 'usd',
      limit: 5,
      spent: 0,
      reserved: 4.5,
      requested: 0.75,
    },
  });
  expect(refused.state.counters.refused).toBe(1);
  // Nothing was held by the refusal.
  expect(getScope(refused.state, 'cluster', T0).reply.reserved.usd).toBe(4.5);
  // The agent subtree's own limit binds first for agent:j/sub.
  expect(reserve(s, req('agent:j/sub', 1.01), T0).reply).toMatchObject({
    ok: false,
    exhausted: { scope: 'agent:j/sub', limit: 1 },
  });
});

test('exactly floor(limit / amount) reservations fit, in exact decimal arithmetic', () => {
  let s = emptyLedgerState('cluster');
  s = setLimit(s, 'cluster', { usd: 0.3 }, T0).state;
  let accepted = 0;
  for (let i = 0; i < 5; i++) {
    const t = reserve(s, req('cluster', 0.1), T0);
    s = t.state;
    if (t.reply.ok) accepted++;
  }
  expect(accepted).toBe(3);
  expect(getScope(s, 'cluster', T0).reply.reserved.usd).toBe(0.3);
});

test('tokens and requests limits are enforced like dollars', () => {
  let s = emptyLedgerState('cluster');
  s = setLimit(s, 'cluster', { tokens: 1_000, requests: 2 }, T0).state;
  s = reserve(s, req('cluster', 0, { tokens: 600 }), T0).state;
  expect(reserve(s, req('cluster', 0, { tokens: 500 }), T0).reply).toMatchObject({
    ok: false,
    exhausted: { resource: 'tokens', limit: 1_000, reserved: 600, requested: 500 },
  });
  s = reserve(s, req('cluster', 0, { tokens: 400 }), T0).state;
  expect(reserve(s, req('cluster', 0), T0).reply).toMatchObject({
    ok: false,
    exhausted: { resource: 'requests', limit: 2, reserved: 2, requested: 1 },
  });
});

test('settling less than reserved returns the rest; settling more overspends and exhausts', () => {
  let s = tree();
  const first = reserve(s, req('job:j', 3, { tokens: 1_000 }), T0);
  s = first.state;
  const a = ok(first);
  const settled = settle(s, a.id, { usd: 1, tokens: 400 }, T0);
  expect(settled.reply).toEqual({
    id: a.id,
    status: 'settled',
    duplicate: false,
    late: false,
    overspent: [],
  });
  s = settled.state;
  const job = getScope(s, 'job:j', T0).reply;
  expect(job.spent).toEqual({ usd: 1, tokens: 400, requests: 1 });
  expect(job.reserved.usd).toBe(0);
  expect(job.remaining.usd).toBe(4);
  s = reserve(s, req('job:j', 3.5), T0).state;
  const lastT = reserve(s, req('job:j', 0.5), T0);
  s = lastT.state;
  const last = ok(lastT);
  expect(getScope(s, 'job:j', T0).reply.exhausted).toBe(true);
  // Actual usage beyond the reservation is recorded anyway.
  const over = settle(s, last.id, { usd: 2, tokens: 10 }, T0);
  expect(over.reply.overspent).toEqual(['job:j']);
  s = over.state;
  expect(s.counters.overspent).toBe(1);
  const after = getScope(s, 'job:j', T0).reply;
  expect(after.spent.usd).toBe(3);
  expect(after.reserved.usd).toBe(3.5);
  expect(after.exhausted).toBe(true);
  expect(after.remaining.usd).toBe(-1.5);
  expect(reserve(s, req('agent:j/a', 0), T0).reply).toMatchObject({
    ok: false,
    exhausted: { scope: 'job:j' },
  });
  expect(checkLedger(s)).toEqual(['job:j: usd spent + reserved > limit']);
});

test('release gives the hold back; settle/release are idempotent and report earlier outcomes', () => {
  let s = tree();
  const r = reserve(s, req('agent:j/a', 2), T0);
  const { id } = ok(r);
  s = r.state;
  const released = release(s, id, T0);
  expect(released.reply).toEqual({ id, status: 'released', duplicate: false });
  s = released.state;
  expect(getScope(s, 'cluster', T0).reply.reserved.usd).toBe(0);
  const again = release(s, id, T0);
  expect(again.reply).toEqual({ id, status: 'released', duplicate: true });
  expect(again.state).toBe(s);

  const r2 = reserve(s, req('agent:j/a', 2), T0);
  s = r2.state;
  const id2 = ok(r2).id;
  s = settle(s, id2, { usd: 1, tokens: 0 }, T0).state;
  const twice = settle(s, id2, { usd: 1, tokens: 0 }, T0);
  expect(twice.reply).toMatchObject({ duplicate: true, status: 'settled' });
  expect(twice.state).toBe(s);
  expect(getScope(s, 'job:j', T0).reply.spent.usd).toBe(1);
  expect(release(s, id2, T0).reply).toEqual({ id: id2, status: 'settled', duplicate: true });
});

test('unknown or malformed reservation ids: NOT_FOUND and INVALID_ARGUMENT', () => {
  const s = tree();
  expect(thrown(() => settle(s, 'r999', { usd: 1, tokens: 0 }, T0))).toMatchObject({
    code: 'NOT_FOUND',
  });
  expect(thrown(() => release(s, 'r999', T0))).toMatchObject({ code: 'NOT_FOUND' });
  expect(thrown(() => release(s, 'constructor', T0))).toMatchObject({
    code: 'INVALID_ARGUMENT',
    details: { field: 'id' },
  });
});

test('reservations expire at their TTL and are reclaimed; a late settle is still charged', () => {
  let s = tree();
  const r = reserve(s, req('agent:j/a', 2, { ttlMs: 100 }), T0);
  const { id, expiresAtMs } = ok(r);
  expect(expiresAtMs).toBe(T0 + 100);
  s = r.state;
  expect(s.nextExpiryAtMs).toBe(T0 + 100);
  expect(expireDue(s, T0 + 99)).toBe(s);
  const expired = expireDue(s, T0 + 100);
  expect(expired.counters.expired).toBe(1);
  expect(expired.nextExpiryAtMs).toBeNull();
  expect(getScope(expired, 'job:j', T0 + 100).reply.reserved.usd).toBe(0);
  // Any operation reclaims lazily, too.
  expect(getScope(s, 'job:j', T0 + 100).reply.reserved.usd).toBe(0);
  expect(release(expired, id, T0 + 101).reply.status).toBe('expired');
  const late = settle(s, id, { usd: 1.5, tokens: 7 }, T0 + 500);
  expect(late.reply).toMatchObject({ late: true, duplicate: false, status: 'settled' });
  expect(getScope(late.state, 'job:j', T0 + 500).reply.spent).toEqual({
    usd: 1.5,
    tokens: 7,
    requests: 1,
  });
  expect(late.state.counters.lateSettled).toBe(1);
  expect(settle(late.state, id, { usd: 1.5, tokens: 7 }, T0 + 600).reply.duplicate).toBe(true);
});

test('a retried reserve with the same requestId returns the first reservation, held once', () => {
  let s = tree();
  const first = reserve(s, req('agent:j/a', 1, { requestId: 'call-1' }), T0);
  s = first.state;
  const retry = reserve(s, req('agent:j/a', 1, { requestId: 'call-1' }), T0 + 5);
  expect(retry.reply).toEqual({ ...first.reply, duplicate: true });
  expect(retry.state).toBe(s);
  expect(getScope(s, 'job:j', T0).reply.reserved.usd).toBe(1);
  expect(thrown(() => reserve(s, req('agent:j/a', 2, { requestId: 'call-1' }), T0))).toMatchObject({
    code: 'INVALID_ARGUMENT',
    details: { field: 'requestId' },
  });
  // Once the first has expired its hold is gone: a late retry holds anew (still only once).
  const late = reserve(s, req('agent:j/a', 1, { requestId: 'call-1' }), T0 + 60_000);
  expect(late.reply).toMatchObject({ ok: true, duplicate: false });
  expect(ok(late).id).not.toBe(ok(first).id);
  expect(getScope(late.state, 'job:j', T0 + 60_000).reply.reserved.usd).toBe(1);
});

test('createScope validates ids, parent kinds and tree membership, and is idempotent', () => {
  const s = tree();
  const cases: [Parameters<typeof createScope>[1], string][] = [
    [{ scope: 'job:k', parent: 'job:j' }, 'parent'],
    [{ scope: 'agent:k/a', parent: 'job:j' }, 'parent'],
    [{ scope: 'agent:j/x', parent: 'job:nope' }, 'parent'],
    [{ scope: 'cluster', parent: 'cluster' }, 'scope'],
    [{ scope: 'team:x', parent: 'cluster' }, 'scope'],
    [{ scope: 'job:a b', parent: 'cluster' }, 'scope'],
  ];
  for (const [input, field] of cases) {
    expect(thrown(() => createScope(s, input, T0))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      details: { field },
    });
  }
  const same = createScope(s, { scope: 'job:j', parent: 'cluster', limits: { usd: 5 } }, T0);
  expect(same.state).toBe(s);
  expect(
    thrown(() => createScope(s, { scope: 'job:j', parent: 'cluster', limits: { usd: 6 } }, T0)),
  ).toMatchObject({ code: 'ALREADY_EXISTS' });

  let jobTree = emptyLedgerState('job:j');
  jobTree = createScope(jobTree, { scope: 'agent:j/a', parent: 'job:j' }, T0).state;
  expect(
    thrown(() => createScope(jobTree, { scope: 'agent:k/a', parent: 'agent:j/a' }, T0)),
  ).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'scope' } });
  expect(
    thrown(() => createScope(jobTree, { scope: 'job:k', parent: 'cluster' }, T0)),
  ).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'scope' } });
});

test('unknown scopes are INVALID_ARGUMENT naming the field', () => {
  const s = tree();
  expect(thrown(() => reserve(s, req('job:nope', 1), T0))).toMatchObject({
    code: 'INVALID_ARGUMENT',
    details: { field: 'scope' },
  });
  expect(thrown(() => getScope(s, 'agent:j/nope', T0))).toMatchObject({
    code: 'INVALID_ARGUMENT',
    details: { field: 'scope' },
  });
});

test('lowering a limit below the usage keeps open reservations and refuses new ones', () => {
  let s = tree();
  const r = reserve(s, req('job:j', 4), T0);
  s = setLimit(r.state, 'job:j', { usd: 2 }, T0).state;
  expect(getScope(s, 'job:j', T0).reply).toMatchObject({ exhausted: true, reservations: 1 });
  expect(reserve(s, req('job:j', 0.01), T0).reply.ok).toBe(false);
  s = release(s, ok(r).id, T0).state;
  expect(reserve(s, req('job:j', 2), T0).reply.ok).toBe(true);
  // Removing the limit (null) makes the scope unlimited again; the ancestors still cap it.
  s = setLimit(s, 'job:j', { usd: null }, T0).state;
  expect(getScope(s, 'job:j', T0).reply.limit.usd).toBeNull();
  expect(reserve(s, req('job:j', 10.01), T0).reply).toMatchObject({
    ok: false,
    exhausted: { scope: 'cluster' },
  });
});

test('removeScope folds a finished subtree into its ancestors; refuses while reservations are open', () => {
  let s = tree();
  const r = reserve(s, req('agent:j/sub', 0.5, { ttlMs: 10 }), T0);
  s = r.state;
  expect(thrown(() => removeScope(s, 'agent:j/a', T0))).toMatchObject({ code: 'BUSY' });
  s = expireDue(s, T0 + 10);
  const removed = removeScope(s, 'agent:j/a', T0 + 10);
  expect(removed.reply).toEqual({ removed: 2 });
  s = removed.state;
  expect(Object.keys(s.scopes).sort()).toEqual(['cluster', 'job:j']);
  // A late settle of a reservation of a removed scope charges the nearest surviving ancestor.
  s = settle(s, ok(r).id, { usd: 0.5, tokens: 0 }, T0 + 20).state;
  expect(getScope(s, 'job:j', T0 + 20).reply.spent.usd).toBe(0.5);
  expect(getScope(s, 'cluster', T0 + 20).reply.spent.usd).toBe(0.5);
  expect(removeScope(s, 'agent:j/a', T0).reply).toEqual({ removed: 0 });
  expect(thrown(() => removeScope(s, 'cluster', T0))).toMatchObject({ code: 'INVALID_ARGUMENT' });
});

test('bounds: open reservations, scopes and remembered lapsed reservations', () => {
  const config: LedgerConfig = { maxScopes: 3, maxOpenReservations: 2, maxLapsed: 2 };
  let s = emptyLedgerState('cluster');
  s = createScope(s, { scope: 'job:a', parent: 'cluster' }, T0, config).state;
  s = createScope(s, { scope: 'job:b', parent: 'cluster' }, T0, config).state;
  expect(
    thrown(() => createScope(s, { scope: 'job:c', parent: 'cluster' }, T0, config)),
  ).toMatchObject({ code: 'UNAVAILABLE', retryable: false });
  const ids: string[] = [];
  for (let i = 0; i < 2; i++) {
    const t = reserve(s, req('job:a', 0), T0, config);
    ids.push(ok(t).id);
    s = t.state;
  }
  expect(thrown(() => reserve(s, req('job:a', 0), T0, config))).toMatchObject({
    code: 'UNAVAILABLE',
    retryable: true,
  });
  for (const id of ids) s = release(s, id, T0, config).state;
  for (let i = 0; i < 3; i++) {
    const t = reserve(s, req('job:b', 0), T0, config);
    s = release(t.state, ok(t).id, T0, config).state;
    // Settled reservations take no memory at all.
    const u = reserve(s, req('job:b', 0), T0, config);
    s = settle(u.state, ok(u).id, { usd: 0, tokens: 0 }, T0, config).state;
  }
  expect(s.lapsed).toHaveLength(2);
  expect(s.seq).toBe(8);
  // A forgotten release is reported as closed; ids never issued are NOT_FOUND.
  expect(release(s, ids[0]!, T0, config).reply).toMatchObject({ duplicate: true });
  expect(thrown(() => release(s, 'r9', T0, config))).toMatchObject({ code: 'NOT_FOUND' });
});

test('transitions never mutate their input state', () => {
  const base = deepFreeze(tree());
  const r = reserve(base, req('agent:j/sub', 0.5, { ttlMs: 10 }), T0);
  deepFreeze(r.state);
  const id = ok(r).id;
  expect(() => settle(r.state, id, { usd: 0.2, tokens: 1 }, T0)).not.toThrow();
  expect(() => release(r.state, id, T0)).not.toThrow();
  expect(() => expireDue(r.state, T0 + 10)).not.toThrow();
  expect(() => setLimit(r.state, 'job:j', { usd: 1 }, T0)).not.toThrow();
  expect(() => createScope(r.state, { scope: 'job:k', parent: 'cluster' }, T0)).not.toThrow();
  expect(() => removeScope(expireDue(r.state, T0 + 10), 'agent:j/sub', T0 + 10)).not.toThrow();
  expect(() => reserve(r.state, req('agent:j/sub', 0.9), T0)).not.toThrow();
});

test('random operation sequences keep spent + reserved <= limit and consistent rollups', () => {
  // A small deterministic PRNG so a failure is reproducible.
  let seed = 42;
  const rand = (): number => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const scopes = ['cluster', 'job:j', 'agent:j/a', 'agent:j/sub'];
  let s = tree();
  let now = T0;
  const open: { id: string; usd: number }[] = [];
  for (let step = 0; step < 3_000; step++) {
    now += Math.floor(rand() * 20);
    const op = rand();
    if (op < 0.5) {
      const t = reserve(
        s,
        req(scopes[Math.floor(rand() * scopes.length)]!, Math.round(rand() * 200) / 100, {
          ttlMs: 1 + Math.floor(rand() * 500),
          tokens: Math.floor(rand() * 10),
        }),
        now,
      );
      s = t.state;
      if (t.reply.ok) open.push({ id: t.reply.id, usd: 0 });
    } else if (op < 0.8 && open.length > 0) {
      const [r] = open.splice(Math.floor(rand() * open.length), 1);
      // Settle at most what was reserved: usage stays under the cap.
      s = settle(s, r!.id, { usd: 0, tokens: 0 }, now).state;
    } else if (op < 0.95 && open.length > 0) {
      const [r] = open.splice(Math.floor(rand() * open.length), 1);
      s = release(s, r!.id, now).state;
    } else {
      s = snapshot(s, now).state;
    }
    const problems = checkLedger(s);
    if (problems.length > 0) throw new Error(`step ${step}: ${problems.join('; ')}`);
  }
  expect(s.counters.reserved).toBeGreaterThan(100);
  expect(s.counters.refused).toBeGreaterThan(0);
  expect(s.counters.expired).toBeGreaterThan(0);
  expect(LedgerStateSchema.parse(s)).toEqual(s);
});
