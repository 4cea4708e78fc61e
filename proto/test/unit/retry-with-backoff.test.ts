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

describe('clipLastPause', () => {
  // Fake timers (Date.now() included): every try's time is exact.
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => jest.useRealTimers());

  /** `fn` that records the time of each try and fails with `again` until `succeedAt` tries. */
  function tries(succeedAt = Infinity) {
    const at: number[] = [];
    const fn = async () => {
      at.push(Date.now());
      if (at.length < succeedAt) throw new Error('again');
      return 'done';
    };
    return { at, fn };
  }

  /** Runs retryWithBackoff to its end on fake time, with the outcome it settled with. */
  async function run(fn: () => Promise<string>, options: Parameters<typeof retryWithBackoff>[1]) {
    const outcome = retryWithBackoff(fn, options).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    await jest.advanceTimersByTimeAsync(60_000);
    return outcome;
  }

  const start = 1_000_000;
  const shape = { isRetryable: retryable, firstPauseMs: 100, maxPauseMs: 100 };

  test('without it, gives up when the next pause would end after untilMs', async () => {
    const { at, fn } = tries();
    const outcome = await run(fn, { ...shape, untilMs: start + 250 });
    expect(outcome).toEqual({ error: new Error('again') });
    // A pause from 200 would end at 300: no try at 250.
    expect(at.map((t) => t - start)).toEqual([0, 100, 200]);
  });

  test('shortens the last pause to end at untilMs, tries once more, then throws', async () => {
    const { at, fn } = tries();
    const outcome = await run(fn, { ...shape, untilMs: start + 250, clipLastPause: true });
    expect(outcome).toEqual({ error: new Error('again') });
    expect(at.map((t) => t - start)).toEqual([0, 100, 200, 250]);
  });

  test('the last try may succeed', async () => {
    const { at, fn } = tries(4);
    const outcome = await run(fn, { ...shape, untilMs: start + 250, clipLastPause: true });
    expect(outcome).toEqual({ value: 'done' });
    expect(at.map((t) => t - start)).toEqual([0, 100, 200, 250]);
  });

  test('a pause ending exactly at untilMs is the last one', async () => {
    const { at, fn } = tries();
    const outcome = await run(fn, { ...shape, untilMs: start + 200, clipLastPause: true });
    expect(outcome).toEqual({ error: new Error('again') });
    expect(at.map((t) => t - start)).toEqual([0, 100, 200]);
  });

  test('a failure at or after untilMs is thrown at once', async () => {
    const { at, fn } = tries();
    const outcome = await run(fn, { ...shape, untilMs: start, clipLastPause: true });
    expect(outcome).toEqual({ error: new Error('again') });
    expect(at).toEqual([start]);
  });

  test('the last try is never before untilMs, even when the clock lags the timer', async () => {
    const { at, fn } = tries();
    const outcome = retryWithBackoff(fn, {
      ...shape,
      firstPauseMs: 1_000,
      untilMs: start + 50,
      clipLastPause: true,
    }).catch((error: unknown) => error);
    await jest.advanceTimersByTimeAsync(10);
    // The Date.now() clock set back 5 ms during the clipped pause: its timer fires at +45.
    jest.setSystemTime(Date.now() - 5);
    await jest.advanceTimersByTimeAsync(60_000);
    await expect(outcome).resolves.toEqual(new Error('again'));
    expect(at).toEqual([start, start + 50]);
  });

  test('an abort ends the clipped pause with the signal reason', async () => {
    const controller = new AbortController();
    const { at, fn } = tries();
    const outcome = retryWithBackoff(fn, {
      ...shape,
      firstPauseMs: 1_000,
      untilMs: start + 500,
      clipLastPause: true,
      signal: controller.signal,
    }).catch((error: unknown) => error);
    await jest.advanceTimersByTimeAsync(100);
    controller.abort();
    await expect(outcome).resolves.toMatchObject({ code: 'CANCELLED' });
    expect(at).toEqual([start]);
  });
});
