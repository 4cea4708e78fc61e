import { Occupancy } from '../../src/internal/occupancy';

test('counts live and pending occupants once per key, per host/kind, kind and job', () => {
  const o = new Occupancy();
  o.setPending('w.a', { hostId: 'h1', kind: 'w', jobId: 'j' });
  expect(o.used('h1', 'w')).toBe(1);
  // The directory shows it live on the same host: still one slot.
  o.setLive('w.a', { hostId: 'h1', kind: 'w', jobId: 'j' });
  expect(o.used('h1', 'w')).toBe(1);
  expect(o.usedByJob('j')).toBe(1);
  // A pending placement never overrides a live occupant.
  o.setPending('w.a', { hostId: 'h2', kind: 'w' });
  expect(o.used('h2', 'w')).toBe(0);
  o.setLive('w.b', { hostId: 'h2', kind: 'w' });
  expect(o.usedByKind('w')).toBe(2);
  expect(o.liveByJob()).toEqual({ j: 1 });
  expect(o.clearLive('w.a')).toBe(true);
  expect(o.clearLive('w.a')).toBe(false);
  expect(o.used('h1', 'w')).toBe(0);
  expect(o.usedByJob('j')).toBe(0);
});

test('a failed placement frees only its own pending slot', () => {
  const o = new Occupancy();
  o.setPending('w.a', { hostId: 'h1', kind: 'w' });
  o.clearPending('w.a', 'h2');
  expect(o.used('h1', 'w')).toBe(1);
  o.clearPending('w.a', 'h1');
  expect(o.used('h1', 'w')).toBe(0);
  // clearLive leaves a pending placement in place.
  o.setPending('w.c', { hostId: 'h1', kind: 'w' });
  expect(o.clearLive('w.c')).toBe(false);
  expect(o.used('h1', 'w')).toBe(1);
});

test('a later entry that is not live settles a pending placement decided on an earlier one', () => {
  // With one value kept per key, a short activation's IDLE entry can be replaced by SLEEPING
  // before the directory watch reads it: the watch shows only SLEEPING, and the placement's
  // pending slot used to stay taken for good (a soak's sandbox slots ran out one by one).
  const o = new Occupancy();
  o.setPending('w.a', { hostId: 'h1', kind: 'w', basedOn: 10 });
  // The entry the placement was decided on (or an older one) settles nothing.
  expect(o.settlePending('w.a', 10)).toBe(false);
  expect(o.used('h1', 'w')).toBe(1);
  expect(o.settlePending('w.a', 12)).toBe(true);
  expect(o.used('h1', 'w')).toBe(0);
  // Live occupants are not touched by it, nor is a pending one without a revision.
  o.setLive('w.b', { hostId: 'h1', kind: 'w' });
  expect(o.settlePending('w.b', 99)).toBe(false);
  o.setPending('w.c', { hostId: 'h1', kind: 'w' });
  expect(o.settlePending('w.c', 99)).toBe(false);
  expect(o.used('h1', 'w')).toBe(2);
});
