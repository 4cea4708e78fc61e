import { ActorSystem } from '@troupe/actors';
import { type TroupeError } from '@troupe/proto';
import { randomClusterName, startNatsServer, type NatsServerHandle } from '@troupe/testkit';
import { RateLimitActor } from '../../src/budget/rate-limit-actor';
import { RateLimiter } from '../../src/budget/rate-limiter';

let server: NatsServerHandle;
let system: ActorSystem;
let limiter: RateLimiter;

beforeAll(async () => {
  server = await startNatsServer();
  system = await ActorSystem.start({
    cluster: randomClusterName(),
    servers: server.url,
    hosting: [RateLimitActor],
  });
  limiter = new RateLimiter(system);
});
afterAll(async () => {
  await system.shutdown({ graceMs: 1_000 });
  await server.stop();
});

async function rejection(p: Promise<unknown>): Promise<TroupeError> {
  try {
    await p;
  } catch (err) {
    return err as TroupeError;
  }
  throw new Error('expected a rejection');
}

test('rpm is shared by concurrent callers: exactly rpm admissions, the rest told when to retry', async () => {
  await limiter.setLimits('gpt-4.1', { rpm: 5 });
  const other = await ActorSystem.start({ cluster: system.cluster, servers: server.url });
  try {
    const remote = new RateLimiter(other);
    const replies = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        (i % 2 === 0 ? limiter : remote).acquire('gpt-4.1', { tokens: 100 }),
      ),
    );
    const admitted = replies.filter((r) => r.ok);
    expect(admitted).toHaveLength(5);
    for (const r of replies) {
      if (!r.ok) {
        expect(r.retryAfterMs).toBeGreaterThan(0);
        expect(r.retryAfterMs).toBeLessThanOrEqual(12_000);
      }
    }
    expect(await limiter.status('gpt-4.1')).toMatchObject({ rpm: 5, availableRequests: 0 });
    // Another model has its own buckets.
    expect(await limiter.acquire('gpt-4_1', { tokens: 100 })).toEqual({ ok: true });
  } finally {
    await other.shutdown({ graceMs: 500 });
  }
});

test('tpm: an over-budget call waits for the bucket to refill', async () => {
  await limiter.setLimits('fast-model', { tpm: 60_000 }); // 1,000 tokens per second
  expect(await limiter.acquire('fast-model', { tokens: 60_000 })).toEqual({ ok: true });
  const refused = await limiter.acquire('fast-model', { tokens: 300 });
  expect(refused.ok).toBe(false);
  const started = Date.now();
  await limiter.acquireOrWait('fast-model', { tokens: 300 }, { maxWaitMs: 5_000 });
  expect(Date.now() - started).toBeGreaterThanOrEqual(200);
  expect(
    await rejection(limiter.acquireOrWait('fast-model', { tokens: 50_000 }, { maxWaitMs: 100 })),
  ).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
});

test('invalid inputs are INVALID_ARGUMENT naming the field', async () => {
  await limiter.setLimits('small', { tpm: 1_000 });
  expect(await rejection(limiter.acquire('small', { tokens: 1_001 }))).toMatchObject({
    code: 'INVALID_ARGUMENT',
    details: { field: 'tokens' },
  });
  expect(await rejection(limiter.acquire('small', { tokens: -1 }))).toMatchObject({
    code: 'INVALID_ARGUMENT',
    message: expect.stringContaining('tokens') as string,
  });
  expect(await rejection(limiter.acquire('bad model', { tokens: 1 }))).toMatchObject({
    code: 'INVALID_ARGUMENT',
    details: { field: 'model' },
  });
  expect(await rejection(limiter.setLimits('small', { rpm: 0 }))).toMatchObject({
    code: 'INVALID_ARGUMENT',
    message: expect.stringContaining('limits.rpm') as string,
  });
  // An unconfigured model admits everything.
  expect(await limiter.acquire('unlimited', { tokens: 10 ** 9 })).toEqual({ ok: true });
});
