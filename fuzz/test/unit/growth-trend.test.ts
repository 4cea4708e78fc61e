import { judgeGrowth, leastSquares, type SeriesPoint } from '../../src/soak/growth-trend';
import { GROWTH_RULES, warmupFor } from '../../src/soak/soak-run';

/** A deterministic pseudo-random noise source (no flakes). */
function noise(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1_103_515_245 + 12_345) % 2 ** 31;
    return x / 2 ** 31 - 0.5;
  };
}

/** Samples every `stepS` over `durationS`: `f(t)` plus noise of `amplitude` (peak to peak). */
function series(
  durationS: number,
  stepS: number,
  f: (t: number) => number,
  amplitude: number,
  seed = 1,
): SeriesPoint[] {
  const r = noise(seed);
  const out: SeriesPoint[] = [];
  for (let t = 0; t <= durationS; t += stepS) out.push({ t, v: f(t) + amplitude * r() });
  return out;
}

describe('leastSquares', () => {
  test('recovers the slope and intercept of a line', () => {
    const { slope, intercept } = leastSquares([0, 1, 2, 3, 4].map((t) => ({ t, v: 3 + 2 * t })));
    expect(slope).toBeCloseTo(2, 10);
    expect(intercept).toBeCloseTo(3, 10);
  });

  test('a single point or equal times give slope 0', () => {
    expect(leastSquares([{ t: 1, v: 5 }]).slope).toBe(0);
    expect(
      leastSquares([
        { t: 1, v: 5 },
        { t: 1, v: 9 },
      ]).slope,
    ).toBe(0);
  });
});

describe('judgeGrowth', () => {
  const warmupS = warmupFor(1800);

  test('a slow RSS leak over 30 min is growth', () => {
    // 60 MB/h on top of 120 MB, with a 10 MB GC/allocator sawtooth.
    const s = series(1800, 5, (t) => 120 + (60 * t) / 3600 + (t % 60) / 6, 10);
    const v = judgeGrowth(s, GROWTH_RULES.rssMb, { warmupS });
    expect(v.verdict).toBe('growth');
    expect(v.slopePerH).toBeGreaterThan(50);
    expect(v.slopePerH).toBeLessThan(70);
  });

  test('a flat noisy RSS is ok, however steep its warm-up', () => {
    // Grows 60 MB in the first 2 min (caches, JIT), then flat with noise.
    const s = series(1800, 5, (t) => 60 + 60 * Math.min(1, t / 120), 12, 7);
    const v = judgeGrowth(s, GROWTH_RULES.rssMb, { warmupS });
    expect(v.verdict).toBe('ok');
    expect(Math.abs(v.slopePerH)).toBeLessThan(GROWTH_RULES.rssMb.maxSlopePerH);
  });

  test('one descriptor leaked per job (a job every 20 s) is growth; a steady pool is ok', () => {
    const leaking = series(1800, 5, (t) => 20 + Math.floor(t / 20), 0);
    expect(judgeGrowth(leaking, GROWTH_RULES.fds, { warmupS }).verdict).toBe('growth');
    // A pool of sockets opening and closing between 20 and 26.
    const steady = series(1800, 5, () => 23, 6, 3).map((p) => ({ ...p, v: Math.round(p.v) }));
    expect(judgeGrowth(steady, GROWTH_RULES.fds, { warmupS }).verdict).toBe('ok');
  });

  test('a short run: noise is ok even when its slope is steep, a fast leak is growth', () => {
    const shortWarmup = warmupFor(150);
    expect(shortWarmup).toBe(60);
    // 3 MB of drift in 90 s is 120 MB/h, but a rise under minRise: not judged a leak.
    const drift = series(150, 2, (t) => 100 + (3 * t) / 150, 1);
    const v = judgeGrowth(drift, GROWTH_RULES.rssMb, { warmupS: shortWarmup });
    expect(v.slopePerH).toBeGreaterThan(GROWTH_RULES.rssMb.maxSlopePerH);
    expect(v.verdict).toBe('ok');
    expect(v.reason).toMatch(/rise/);
    // 0.5 MB/s retained: 45 MB over the judged window.
    const leak = series(150, 2, (t) => 40 + 0.5 * t, 2);
    expect(judgeGrowth(leak, GROWTH_RULES.heapMb, { warmupS: shortWarmup }).verdict).toBe('growth');
  });

  test('a falling series is ok', () => {
    const s = series(600, 5, (t) => 200 - t / 10, 2);
    expect(judgeGrowth(s, GROWTH_RULES.rssMb, { warmupS: 60 }).verdict).toBe('ok');
  });

  test('too few samples after the warm-up is too-short, not a pass', () => {
    const s = series(70, 5, (t) => t, 0);
    const v = judgeGrowth(s, GROWTH_RULES.rssMb, { warmupS: 60 });
    expect(v.verdict).toBe('too-short');
    expect(v.points).toBe(3);
  });

  test('the fitted line spans the judged window', () => {
    const s = series(300, 10, (t) => 2 * t, 0);
    const v = judgeGrowth(s, { maxSlopePerH: 1, minRise: 1 }, { warmupS: 100 });
    expect(v.fit).toEqual({ t0: 100, v0: 200, t1: 300, v1: 600 });
    expect(v.slopePerH).toBeCloseTo(7200, 6);
    expect(v.rise).toBeCloseTo(400, 6);
  });
});
