import { waitFor, WaitTimeoutError } from '@troupe/testkit';

describe('waitFor', () => {
  it('returns the first truthy value and stops polling', async () => {
    let calls = 0;
    const value = await waitFor(() => (++calls >= 3 ? { ready: calls } : undefined), {
      timeoutMs: 5_000,
      intervalMs: 1,
    });
    expect(value).toEqual({ ready: 3 });
    expect(calls).toBe(3);
  });

  it('awaits async predicates and treats thrown errors as "not yet"', async () => {
    let calls = 0;
    const value = await waitFor(
      async () => {
        calls += 1;
        if (calls < 3) throw new Error(`not yet ${calls}`);
        return 'done';
      },
      { timeoutMs: 5_000, intervalMs: 1 },
    );
    expect(value).toBe('done');
    expect(calls).toBe(3);
  });

  it('times out with the message, the last error as cause, and a stack naming the waiter', async () => {
    const namedWaiter = (): Promise<unknown> =>
      waitFor(
        () => {
          throw new Error('broker unreachable');
        },
        { timeoutMs: 30, intervalMs: 1, message: 'stream created' },
      );
    const err = await namedWaiter().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WaitTimeoutError);
    const timeout = err as WaitTimeoutError;
    expect(timeout.message).toMatch(/^stream created not met within 30 ms/);
    expect(timeout.message).toContain('last error: broker unreachable');
    expect((timeout.cause as Error).message).toBe('broker unreachable');
    expect(timeout.code).toBe('TIMEOUT');
    expect(timeout.timeoutMs).toBe(30);
    // The stack is the caller's, not a timer callback's.
    expect(timeout.stack).toContain('namedWaiter');
    expect(timeout.stack).toMatch(/^WaitTimeoutError: stream created/);
  });

  it('does not wait for a predicate that never settles past the deadline', async () => {
    let calls = 0;
    const never = new Promise<boolean>(() => undefined);
    await expect(
      waitFor(
        () => {
          calls += 1;
          return never;
        },
        { timeoutMs: 20 },
      ),
    ).rejects.toBeInstanceOf(WaitTimeoutError);
    expect(calls).toBe(1);
  });

  it('passes a signal to the predicate that aborts when the wait ends', async () => {
    let seen: AbortSignal | undefined;
    await waitFor(
      (signal) => {
        seen = signal;
        return true;
      },
      { timeoutMs: 1_000 },
    );
    expect(seen?.aborted).toBe(true);
  });

  it('rejects with the caller signal reason on abort, not a timeout', async () => {
    const controller = new AbortController();
    const reason = new Error('shutdown');
    const pending = waitFor(() => false, {
      timeoutMs: 60_000,
      intervalMs: 1,
      signal: controller.signal,
    });
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });

  it('rejects immediately for an already-aborted signal without calling the predicate', async () => {
    let calls = 0;
    await expect(
      waitFor(() => ++calls, { timeoutMs: 1_000, signal: AbortSignal.abort(new Error('user')) }),
    ).rejects.toThrow('user');
    expect(calls).toBe(0);
  });

  it('rejects a negative timeout', async () => {
    await expect(waitFor(() => true, { timeoutMs: -1 })).rejects.toBeInstanceOf(RangeError);
  });
});
