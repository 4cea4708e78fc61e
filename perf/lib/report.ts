/**
 * Shared helpers for perf suites: percentiles, timing and the one-line JSON result every suite
 * prints last (`{"suite": ..., "metrics": {...}}`), as the perf convention requires.
 */

/** Returns the q-quantile (0..1) of `values` by nearest rank; NaN for an empty list. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] as number;
}

/** Median by nearest rank. */
export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

/** Monotonic clock in microseconds. */
export function nowUs(): number {
  return Number(process.hrtime.bigint()) / 1_000;
}

/** Rounds to `digits` decimals so the JSON line stays readable. */
export function round(value: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** Prints a human-readable table of raw figures (to stdout, before the JSON line). */
export function printTable(title: string, rows: Record<string, number | string>): void {
  console.log(`\n${title}`);
  const width = Math.max(...Object.keys(rows).map((k) => k.length));
  for (const [k, v] of Object.entries(rows)) {
    console.log(`  ${k.padEnd(width)}  ${typeof v === 'number' ? round(v) : v}`);
  }
}

/** Prints the suite's final line: `{"suite": "<suite>", "metrics": {...}}`. */
export function printResult(suite: string, metrics: Record<string, number | string>): void {
  const rounded = Object.fromEntries(
    Object.entries(metrics).map(([k, v]) => [k, typeof v === 'number' ? round(v) : v]),
  );
  console.log(JSON.stringify({ suite, metrics: rounded }));
}
