import { encodedBytes, fitOutput } from '../../src/internal/fit-reply';

const result = (stdout: string, stderr = '') => ({
  exitCode: 0,
  stdout,
  stderr,
  stdoutDroppedBytes: 0,
  stderrDroppedBytes: 0,
  timedOut: false,
  durationMs: 1,
});

describe('fitOutput', () => {
  test('leaves a reply that fits alone', () => {
    const r = result('hello');
    expect(fitOutput(r, 1_000)).toBe(r);
  });

  test('drops bytes from the middle of both streams and counts them', () => {
    const r = result('HEAD' + 'x'.repeat(10_000) + 'TAIL', 'E'.repeat(5_000));
    const fitted = fitOutput(r, 4_000);
    expect(encodedBytes(fitted)).toBeLessThanOrEqual(4_000);
    expect(fitted.stdout.startsWith('HEAD')).toBe(true);
    expect(fitted.stdout.endsWith('TAIL')).toBe(true);
    expect(fitted.stdoutDroppedBytes).toBe(10_008 - Buffer.byteLength(fitted.stdout));
    expect(fitted.stderrDroppedBytes).toBe(5_000 - fitted.stderr.length);
    expect(r.stdoutDroppedBytes).toBe(0); // the input is not changed
  });

  test('accounts for JSON escaping (control bytes take six bytes each)', () => {
    const r = result('\u0001'.repeat(20_000));
    const fitted = fitOutput(r, 10_000);
    expect(encodedBytes(fitted)).toBeLessThanOrEqual(10_000);
    expect(fitted.stdoutDroppedBytes).toBeGreaterThan(18_000);
  });
});
