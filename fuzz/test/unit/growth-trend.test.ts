import { judgeGrowth, leastSquares, type SeriesPoint } from '../../src/soak/growth-trend';
import { type ProcessSample } from '../../src/soak/process-sampler';
import { GROWTH_RULES, judgeSeries, type SoakedSeries, warmupFor } from '../../src/soak/soak-run';

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

describe('judgeSeries: a Go heap with a block cache', () => {
  const warmupS = warmupFor(3600);

  /**
   * An hour of nats-server samples every 10 s: `outside(t)` MB of heap besides the block cache,
   * and a cache of `cache(t)` MB (the heap is their sum).
   */
  function natsServer(
    outside: (t: number) => number,
    cache: (t: number) => number,
    options: { durationS?: number; rssOutside?: (t: number) => number } = {},
  ): SoakedSeries {
    const r = noise(5);
    const samples: ProcessSample[] = [];
    for (let t = 0; t <= (options.durationS ?? 3600); t += 10) {
      const rest = outside(t) + r();
      const blocks = cache(t);
      // Resident: the heap (cache and rest) and what the runtime holds besides it.
      const rss = 30 + (options.rssOutside?.(t) ?? 0) + rest + blocks + r();
      samples.push({
        t,
        rssMb: rss,
        fds: 30,
        heapMb: rest + blocks,
        blockBuffersMb: blocks,
        heapOutsideCacheMb: rest,
        rssOutsideCacheMb: rss - blocks,
      });
    }
    return { process: { name: 'nats-server', pid: 1 }, samples, verdicts: {} };
  }

  /** Newest blocks filling: buffers 4 MB each for 4 streams, two moving up to 8 MB mid-run. */
  const filling = (t: number) => 16 + (t > 1500 ? 4 : 0) + (t > 2400 ? 4 : 0);

  test('blocks filling up a size class are not a heap leak', () => {
    const s = natsServer(() => 5, filling);
    judgeSeries([s], warmupS);
    // The whole heap rose 8 MB after the warm-up (over 10 MB/h) but is only shown ...
    expect(s.verdicts.heapMb).toBeUndefined();
    expect(s.shown?.heapMb?.slopePerH).toBeGreaterThan(GROWTH_RULES.heapMb.maxSlopePerH);
    expect(s.shown?.heapMb?.rise).toBeGreaterThan(GROWTH_RULES.heapMb.minRise);
    // ... and judged as a cache that stepped twice and a flat rest.
    expect(s.verdicts.blockBuffersMb?.verdict).toBe('ok');
    expect(s.verdicts.heapOutsideCacheMb?.verdict).toBe('ok');
    expect(s.verdicts.rssOutsideCacheMb?.verdict).toBe('ok');
  });

  /** A 30-minute soak's cache: three buffers moving up a size class after the warm-up. */
  const stepping = (t: number) => 16 + 4 * Math.min(3, Math.max(0, Math.floor((t - 600) / 300)));

  test('an RSS that rises with the block cache is not an RSS leak', () => {
    const s = natsServer(() => 5, stepping, { durationS: 1800 });
    judgeSeries([s], warmupFor(1800));
    // The whole RSS rose 12 MB in 20 minutes (the soaks of 2026-12-05..07 saw 13 MB) ...
    expect(s.verdicts.rssMb).toBeUndefined();
    expect(s.shown?.rssMb?.verdict).toBe('growth');
    // ... all of it block buffers, which a 24 MB rise would be needed to call growth.
    expect(s.verdicts.blockBuffersMb?.verdict).toBe('ok');
    expect(s.verdicts.rssOutsideCacheMb?.verdict).toBe('ok');
  });

  test('an RSS that rises outside the block cache is growth', () => {
    // 30 MB/h resident that is neither the cache nor the Go heap (say, cgo or stacks).
    const s = natsServer(() => 5, stepping, {
      durationS: 1800,
      rssOutside: (t) => (30 * t) / 3600,
    });
    judgeSeries([s], warmupFor(1800));
    expect(s.verdicts.rssOutsideCacheMb?.verdict).toBe('growth');
    expect(s.verdicts.heapOutsideCacheMb?.verdict).toBe('ok');
  });

  test('a leak outside the cache is growth', () => {
    const s = natsServer((t) => 5 + (12 * t) / 3600, filling);
    judgeSeries([s], warmupS);
    expect(s.verdicts.heapOutsideCacheMb?.verdict).toBe('growth');
    expect(s.verdicts.blockBuffersMb?.verdict).toBe('ok');
  });

  test('blocks cached and never let go are growth of the cache', () => {
    // A 4 MB buffer more every 5 minutes: 48 MB/h.
    const s = natsServer(
      () => 5,
      (t) => 16 + 4 * Math.floor(t / 300),
    );
    judgeSeries([s], warmupS);
    expect(s.verdicts.blockBuffersMb?.verdict).toBe('growth');
    expect(s.verdicts.heapOutsideCacheMb?.verdict).toBe('ok');
  });

  test('a process without a block cache is judged on its whole heap', () => {
    const s = natsServer(
      () => 5,
      () => 0,
    );
    for (const x of s.samples) {
      delete x.blockBuffersMb;
      delete x.heapOutsideCacheMb;
      delete x.rssOutsideCacheMb;
      x.heapMb = 40 + (30 * x.t) / 3600;
    }
    judgeSeries([s], warmupS);
    expect(s.shown).toBeUndefined();
    expect(s.verdicts.heapMb?.verdict).toBe('growth');
    expect(s.verdicts.rssMb?.verdict).toBe('ok');
    expect(s.verdicts.blockBuffersMb).toBeUndefined();
  });
});
