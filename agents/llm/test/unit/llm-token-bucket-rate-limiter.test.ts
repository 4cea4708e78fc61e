import { TokenBucketRateLimiter } from '../../src/token-bucket-rate-limiter';

describe('TokenBucketRateLimiter', () => {
  let now = 0;
  const limiter = (): TokenBucketRateLimiter =>
    new TokenBucketRateLimiter({ limits: { m: { rpm: 2, tpm: 600 }, free: {} }, nowMs: () => now });

  beforeEach(() => {
    now = 0;
  });

  it('allows a minute of requests at once, then says when the next one fits', () => {
    const rl = limiter();
    expect(rl.acquire('m', { tokens: 10 })).toEqual({ ok: true });
    expect(rl.acquire('m', { tokens: 10 })).toEqual({ ok: true });
    expect(rl.acquire('m', { tokens: 10 })).toEqual({ ok: false, retryAfterMs: 30_000 });
    now = 30_000;
    expect(rl.acquire('m', { tokens: 10 })).toEqual({ ok: true });
  });

  it('limits tokens per minute and lets an oversized request through once the bucket is full', () => {
    const rl = limiter();
    expect(rl.acquire('m', { tokens: 500 })).toEqual({ ok: true });
    expect(rl.acquire('m', { tokens: 200 })).toEqual({ ok: false, retryAfterMs: 10_000 });
    now = 60_000;
    expect(rl.acquire('m', { tokens: 5_000 })).toEqual({ ok: true });
  });

  it('does not limit models without limits', () => {
    const rl = limiter();
    for (let i = 0; i < 100; i++) expect(rl.acquire('free', { tokens: 1e9 }).ok).toBe(true);
    expect(rl.acquire('unknown', { tokens: 1 }).ok).toBe(true);
    expect(new TokenBucketRateLimiter({ limits: { a: {} } }).limitsAnything).toBe(false);
  });
});
