import { type TroupeError } from '@troupe/proto';
import {
  acquire,
  configureRateLimits,
  emptyRateLimitState,
  type RateLimitState,
  rateLimitStatus,
} from '../../src/budget/rate-limit-state';
import { rateLimitActorId } from '../../src/budget/rate-limit-actor';

const T0 = 5_000_000;

function admit(state: RateLimitState, tokens: number, now: number) {
  return acquire(state, tokens, now);
}

test('an unconfigured model admits everything without changing state', () => {
  const s = emptyRateLimitState('m');
  const out = admit(s, 1_000_000, T0);
  expect(out.reply).toEqual({ ok: true });
  expect(out.state).toBe(s);
});

test('rpm: a full bucket admits rpm requests, then says when the next one fits', () => {
  let s = configureRateLimits(emptyRateLimitState('m'), { rpm: 3 }, T0);
  for (let i = 0; i < 3; i++) {
    const out = admit(s, 0, T0);
    expect(out.reply).toEqual({ ok: true });
    s = out.state;
  }
  const refused = admit(s, 0, T0);
  expect(refused.reply).toEqual({ ok: false, retryAfterMs: 20_000 });
  expect(refused.state).toBe(s);
  expect(admit(s, 0, T0 + 19_999).reply.ok).toBe(false);
  expect(admit(s, 0, T0 + 20_000).reply).toEqual({ ok: true });
});

test('tpm: tokens refill continuously; a call larger than tpm is INVALID_ARGUMENT', () => {
  let s = configureRateLimits(emptyRateLimitState('m'), { tpm: 6_000 }, T0);
  s = admit(s, 5_900, T0).state;
  expect(admit(s, 600, T0).reply).toEqual({ ok: false, retryAfterMs: 5_000 });
  expect(admit(s, 600, T0 + 2_000).reply).toEqual({ ok: false, retryAfterMs: 3_000 });
  expect(admit(s, 600, T0 + 5_000).reply).toEqual({ ok: true });
  expect(rateLimitStatus(s, T0 + 1_000)).toEqual({
    model: 'm',
    rpm: null,
    tpm: 6_000,
    availableRequests: null,
    availableTokens: 200,
  });
  let err: TroupeError | undefined;
  try {
    admit(s, 6_001, T0);
  } catch (e) {
    err = e as TroupeError;
  }
  expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'tokens' } });
});

test('both buckets must hold enough; the wait is the longer of the two', () => {
  let s = configureRateLimits(emptyRateLimitState('m'), { rpm: 60, tpm: 600 }, T0);
  s = admit(s, 600, T0).state;
  // Requests are plentiful, tokens are not: 300 tokens take 30 s.
  expect(admit(s, 300, T0).reply).toEqual({ ok: false, retryAfterMs: 30_000 });
});

test('reconfiguring keeps levels within the new capacity; a clock going backwards refills nothing', () => {
  let s = configureRateLimits(emptyRateLimitState('m'), { rpm: 10 }, T0);
  s = admit(s, 0, T0).state;
  s = configureRateLimits(s, { rpm: 5 }, T0);
  expect(rateLimitStatus(s, T0).availableRequests).toBe(5);
  s = admit(s, 0, T0).state;
  expect(rateLimitStatus(s, T0 - 60_000).availableRequests).toBe(4);
  s = configureRateLimits(s, {}, T0);
  expect(admit(s, 10 ** 9, T0).reply.ok).toBe(true);
});

test('model names map to distinct valid actor ids', () => {
  const a = rateLimitActorId('gpt-4.1');
  const b = rateLimitActorId('gpt-4_1');
  expect(a).toMatch(/^gpt-4_1-[0-9a-f]{12}$/);
  expect(a).not.toBe(b);
  expect(rateLimitActorId('meta-llama/Llama-3.1-8B')).toMatch(/^[A-Za-z0-9_-]{1,128}$/);
  expect(rateLimitActorId('x'.repeat(200))).toHaveLength(113);
  expect(() => rateLimitActorId('has space')).toThrow(/model/);
});
