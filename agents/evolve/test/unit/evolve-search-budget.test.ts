import { activeIntervals, budgetStopReason, unionLengthMs } from '../../src/search-budget';

const limits = { maxEvaluations: 10, maxWallMs: 1_000, maxCostUsd: 1, maxGenerations: 5 };
const usage = {
  evaluations: 0,
  lostAttempts: 0,
  chargedMs: 0,
  queueMs: 0,
  costUsd: 0,
  generations: 0,
};

describe('budgets', () => {
  it('names the first limit reached', () => {
    expect(budgetStopReason(usage, limits)).toBeUndefined();
    expect(budgetStopReason({ ...usage, evaluations: 10 }, limits)).toBe('evaluations');
    expect(budgetStopReason({ ...usage, chargedMs: 1_000 }, limits)).toBe('wall_time');
    expect(budgetStopReason({ ...usage, costUsd: 1 }, limits)).toBe('cost');
    expect(budgetStopReason({ ...usage, generations: 5 }, limits)).toBe('generations');
    // Queue wait is never a reason to stop.
    expect(budgetStopReason({ ...usage, queueMs: 1e9 }, limits)).toBeUndefined();
  });

  it('measures the union of intervals, counting overlaps once', () => {
    expect(unionLengthMs([])).toBe(0);
    expect(
      unionLengthMs([
        [0, 10],
        [5, 15],
        [20, 30],
        [30, 31],
        [40, 40],
      ]),
    ).toBe(26);
    expect(
      unionLengthMs([
        [5, 6],
        [0, 100],
      ]),
    ).toBe(100);
  });

  it('leaves the queue wait out of an attempt’s active time', () => {
    const t = { startedAt: 1_000, opMs: 10, queueMs: 500, evalMs: 80, totalMs: 600 };
    expect(activeIntervals(t)).toEqual([
      [1_000, 1_010],
      [1_510, 1_600],
    ]);
    // Two attempts queued at the same time behind a busy evaluator: only working time counts.
    const a = activeIntervals({ startedAt: 0, opMs: 0, queueMs: 0, evalMs: 100, totalMs: 100 });
    const b = activeIntervals({ startedAt: 0, opMs: 0, queueMs: 100, evalMs: 100, totalMs: 200 });
    expect(unionLengthMs([...a, ...b])).toBe(200);
    const c = activeIntervals({ startedAt: 0, opMs: 0, queueMs: 900, evalMs: 100, totalMs: 1_000 });
    expect(unionLengthMs([...a, ...c])).toBe(200);
  });
});
