/** The subset of the WHATWG `Headers` API read here. */
export interface HeaderReader {
  get(name: string): string | null;
}

const SECONDS = /^\s*\d+(\.\d+)?\s*$/;

/**
 * How long the provider asked us to wait, in ms: `retry-after-ms` (OpenAI's, a number of ms)
 * wins over `retry-after` (a number of seconds or an HTTP date). Undefined when neither header is
 * present or parseable; a date in the past gives 0.
 */
export function parseRetryAfterMs(
  headers: HeaderReader | undefined,
  nowMs: number = Date.now(),
): number | undefined {
  if (headers === undefined) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms !== null) {
    const value = Number.parseFloat(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const retryAfter = headers.get('retry-after');
  if (retryAfter === null || retryAfter.trim() === '') return undefined;
  if (SECONDS.test(retryAfter)) return Number.parseFloat(retryAfter) * 1_000;
  const date = Date.parse(retryAfter);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}
