/** One sample of a series: seconds since the run started, and the value. */
export interface SeriesPoint {
  t: number;
  v: number;
}

/**
 * When a series counts as growing: its least-squares slope after the warm-up is above
 * `maxSlopePerH` **and** the fitted line rises by more than `minRise` over the judged window.
 * The second condition keeps a short run honest: over two minutes a few MB of noise extrapolate
 * to hundreds of MB/h, but they are not a leak until the rise itself is large.
 */
export interface GrowthRule {
  /** Largest tolerated slope, in the series' unit per hour. */
  maxSlopePerH: number;
  /** Smallest fitted rise over the judged window that can be a leak, in the series' unit. */
  minRise: number;
}

/** Options of {@link judgeGrowth}. */
export interface JudgeGrowthOptions {
  /** Samples before `warmupS` (seconds since start) are left out of the fit. */
  warmupS: number;
  /** Fewest samples after the warm-up the fit needs. @default 5 */
  minPoints?: number;
}

/** What {@link judgeGrowth} found. */
export interface GrowthVerdict {
  /** `growth`: a trend above the rule; `ok`: none; `too-short`: too few samples to judge. */
  verdict: 'ok' | 'growth' | 'too-short';
  /** Least-squares slope after the warm-up, per hour (0 when too short). */
  slopePerH: number;
  /** Fitted value at the first and last judged sample (the line drawn in the report). */
  fit?: { t0: number; v0: number; t1: number; v1: number };
  /** Fitted rise over the judged window (slope × window). */
  rise: number;
  /** Samples fitted. */
  points: number;
  /** One line saying why. */
  reason: string;
}

/** Least-squares line through `points`: slope per second and intercept. */
export function leastSquares(points: readonly SeriesPoint[]): { slope: number; intercept: number } {
  const n = points.length;
  if (n < 2) return { slope: 0, intercept: points[0]?.v ?? 0 };
  let st = 0;
  let sv = 0;
  for (const p of points) {
    st += p.t;
    sv += p.v;
  }
  const mt = st / n;
  const mv = sv / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.t - mt) * (p.v - mv);
    den += (p.t - mt) ** 2;
  }
  const slope = den === 0 ? 0 : num / den;
  return { slope, intercept: mv - slope * mt };
}

/**
 * Judges one series for a growth trend: a least-squares line through the samples after the
 * warm-up, its slope per hour against `rule.maxSlopePerH` and its rise over the window against
 * `rule.minRise` (see {@link GrowthRule}).
 */
export function judgeGrowth(
  series: readonly SeriesPoint[],
  rule: GrowthRule,
  options: JudgeGrowthOptions,
): GrowthVerdict {
  const judged = series.filter((p) => p.t >= options.warmupS && Number.isFinite(p.v));
  const minPoints = options.minPoints ?? 5;
  if (judged.length < minPoints) {
    return {
      verdict: 'too-short',
      slopePerH: 0,
      rise: 0,
      points: judged.length,
      reason: `${judged.length} samples after the ${options.warmupS} s warm-up (need ${minPoints})`,
    };
  }
  const { slope, intercept } = leastSquares(judged);
  const first = judged[0] as SeriesPoint;
  const last = judged[judged.length - 1] as SeriesPoint;
  const slopePerH = slope * 3600;
  const rise = slope * (last.t - first.t);
  const fit = {
    t0: first.t,
    v0: intercept + slope * first.t,
    t1: last.t,
    v1: intercept + slope * last.t,
  };
  const growing = slopePerH > rule.maxSlopePerH && rise > rule.minRise;
  const r = (x: number) => Math.round(x * 100) / 100;
  return {
    verdict: growing ? 'growth' : 'ok',
    slopePerH,
    fit,
    rise,
    points: judged.length,
    reason: growing
      ? `slope ${r(slopePerH)}/h > ${rule.maxSlopePerH}/h and rise ${r(rise)} > ${rule.minRise} over ${Math.round(last.t - first.t)} s`
      : slopePerH <= rule.maxSlopePerH
        ? `slope ${r(slopePerH)}/h ≤ ${rule.maxSlopePerH}/h`
        : `slope ${r(slopePerH)}/h but rise ${r(rise)} ≤ ${rule.minRise} over ${Math.round(last.t - first.t)} s`,
  };
}
