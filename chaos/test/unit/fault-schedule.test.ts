import {
  describeFault,
  FaultKind,
  makeSchedule,
  type ScheduleShape,
} from '../../src/fault-schedule';
import { percentile } from '../../src/percentile';

const SHAPE: ScheduleShape = {
  kinds: [FaultKind.KILL, FaultKind.STOP, FaultKind.NATS_RESTART, FaultKind.PARTITION],
  faultsPerSchedule: 3,
  tasks: 18,
  coordinators: 2,
  nodeAgents: 3,
  natsServers: 3,
};

test('a seed always gives the same schedule, and another seed another one', () => {
  expect(makeSchedule(42, SHAPE)).toEqual(makeSchedule(42, SHAPE));
  const many = new Set(
    Array.from({ length: 20 }, (_, i) => JSON.stringify(makeSchedule(i, SHAPE).faults)),
  );
  expect(many.size).toBe(20);
});

test('schedules hit only what exists, with the kinds of the shape', () => {
  const faults = Array.from({ length: 200 }, (_, i) => makeSchedule(i, SHAPE).faults).flat();
  expect(new Set(faults.map((f) => f.kind))).toEqual(new Set(SHAPE.kinds));
  for (const f of faults) {
    expect(f.gapMs).toBeGreaterThanOrEqual(300);
    if (f.target.role === 'docker' || f.target.role === 'leader') {
      throw new Error(`${f.target.role} is not in the shape`);
    }
    const max = { coordinator: 2, 'node-agent': 3, nats: 3 }[f.target.role];
    expect(f.target.index).toBeLessThan(max);
    if (f.kind === FaultKind.PARTITION) expect(f.target.role).toBe('node-agent');
    if (f.kind === FaultKind.NATS_RESTART) expect(f.target.role).toBe('nats');
  }
});

test('roles restrict what kills and stops hit; the leader is resolved when injected', () => {
  const shape: ScheduleShape = { ...SHAPE, kinds: [FaultKind.KILL], roles: ['leader'] };
  const faults = Array.from({ length: 50 }, (_, i) => makeSchedule(i, shape).faults).flat();
  expect(faults.every((f) => f.kind === FaultKind.KILL && f.target.role === 'leader')).toBe(true);
  expect(describeFault(faults[0]!)).toBe('kill9 leader');
  // No roles: the same schedules as before roles existed (a seed replays what it always did).
  expect(makeSchedule(7, { ...SHAPE, roles: ['coordinator', 'node-agent', 'nats'] })).toEqual(
    makeSchedule(7, SHAPE),
  );
});

test('percentile is the nearest rank', () => {
  expect(percentile([], 99)).toBeUndefined();
  expect(percentile([3, 1, 2], 50)).toBe(2);
  expect(
    percentile(
      Array.from({ length: 100 }, (_, i) => i + 1),
      99,
    ),
  ).toBe(99);
  expect(percentile([5], 99)).toBe(5);
});
