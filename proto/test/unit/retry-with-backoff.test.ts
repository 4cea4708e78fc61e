import { retryWithBackoff } from '@troupe/proto';

const retryable = (err: unknown) => err instanceof Error && err.message === 'again';

test('tries again after each retryable failure, pausing longer each time', async () => {
  const at: number[] = [];
  const value = await retryWithBackoff(
    async () => {
      at.push(performance.now());
      if (at.length < 4) throw new Error('again');
      return 'done';
    },
    { isRetryable: retryable, untilMs: Date.now() + 10_000, firstPauseMs: 20, maxPauseMs: 40 },
  );
  expect(value).toBe('done');
  const pauses = at.slice(1).map((t, i) => t - at[i]!);
  // 20, 40, then capped at 40 (timers may fire a little late, never early).
  expect(pauses.map((p) => p >= 19)).toEqual([true, true, true]);
  expect(pauses[1]).toBeGreaterThanOrEqual(39);
  expect(pauses[2]).toBeGreaterThanOrEqual(39);
});

test('any other failure is thrown at once', async () => {
  let calls = 0;
  await expect(
    retryWithBackoff(
      async () => {
        calls++;
        throw new Error('broken');
      },
      { isRetryable: retryable, untilMs: Date.now() + 10_000, firstPauseMs: 1 },
    ),
  ).rejects.toThrow('broken');
  expect(calls).toBe(1);
});

test('the last failure is thrown when the next pause would end after untilMs', async () => {
  let calls = 0;
  const started = Date.now();
  await expect(
    retryWithBackoff(
      async () => {
        calls++;
        throw new Error('again');
      },
      { isRetryable: retryable, untilMs: started + 125, firstPauseMs: 50, maxPauseMs: 50 },
    ),
  ).rejects.toThrow('again');
  // Tries at 0, 50, 100 (a pause from 100 would end at 150, after 125); none past 125. The
  // limit sits between two tries: timers may fire up to 1 ms early on the Date.now() clock, so a
  // limit on a try's own time would make the count depend on rounding.
  expect(calls).toBeGreaterThanOrEqual(2);
  expect(calls).toBeLessThanOrEqual(3);
  expect(Date.now() - started).toBeLessThan(1_000);
});

test('an abort ends the pause with the signal reason', async () => {
  const controller = new AbortController();
  const run = retryWithBackoff(
    async () => {
      setTimeout(() => controller.abort(), 5);
      throw new Error('again');
    },
    {
      isRetryable: retryable,
      untilMs: Date.now() + 60_000,
      firstPauseMs: 30_000,
      signal: controller.signal,
    },
  );
  await expect(run).rejects.toMatchObject({ code: 'CANCELLED' });
});
