import { backoffDelayMs, resolveRetryConfig } from '../../src/retry-options';
import { parseRetryAfterMs } from '../../src/internal/retry-after';

const headers = (values: Record<string, string>): Headers => new Headers(values);

describe('parseRetryAfterMs', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');

  it('prefers retry-after-ms, then reads retry-after as seconds or an HTTP date', () => {
    expect(parseRetryAfterMs(headers({ 'retry-after-ms': '250', 'retry-after': '9' }), now)).toBe(
      250,
    );
    expect(parseRetryAfterMs(headers({ 'retry-after': '2' }), now)).toBe(2_000);
    expect(parseRetryAfterMs(headers({ 'retry-after': '0.5' }), now)).toBe(500);
    expect(
      parseRetryAfterMs(headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:03 GMT' }), now),
    ).toBe(3_000);
    expect(
      parseRetryAfterMs(headers({ 'retry-after': 'Tue, 31 Dec 2024 23:59:00 GMT' }), now),
    ).toBe(0);
  });

  it('ignores absent and unparseable values', () => {
    expect(parseRetryAfterMs(undefined)).toBeUndefined();
    expect(parseRetryAfterMs(headers({}))).toBeUndefined();
    expect(parseRetryAfterMs(headers({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(parseRetryAfterMs(headers({ 'retry-after-ms': '-1', 'retry-after': '1' }))).toBe(1_000);
  });
});

describe('backoffDelayMs', () => {
  const config = resolveRetryConfig({ initialBackoffMs: 100, maxBackoffMs: 350, jitterRatio: 0.5 });

  it('doubles from initialBackoffMs up to maxBackoffMs', () => {
    expect([2, 3, 4, 5].map((n) => backoffDelayMs(n, config, () => 0))).toEqual([
      100, 200, 350, 350,
    ]);
  });

  it('removes at most jitterRatio of the delay', () => {
    expect(backoffDelayMs(3, config, () => 0.999_999)).toBeCloseTo(100, 3);
    expect(backoffDelayMs(3, config, () => 0.5)).toBe(150);
  });
});

describe('resolveRetryConfig', () => {
  it('defaults every field', () => {
    expect(resolveRetryConfig()).toEqual({
      maxAttempts: 4,
      initialBackoffMs: 500,
      maxBackoffMs: 8_000,
      jitterRatio: 0.25,
      maxRetryAfterMs: 60_000,
    });
  });

  it('names the offending field', () => {
    expect(() => resolveRetryConfig({ maxAttempts: 0 })).toThrow(
      'retry.maxAttempts: must be an integer ≥ 1',
    );
  });
});
