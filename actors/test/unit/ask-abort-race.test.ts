import { raceSignal, TroupeError } from '@troupe/proto';

// Asks race their NATS request with the caller's signal through proto's raceSignal.
// A fenced activation aborts its turn's signal; an ask made just then got a promise that checks
// the same signal and rejects at once. That rejection must never go unhandled: in a coordinator
// it ended the process (chaos, `--faults sigstop:coordinator`).

/** Rejections nobody handled while `fn` ran and the microtask queue drained after it. */
async function unhandledDuring(fn: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const listener = (reason: unknown) => seen.push(reason);
  process.on('unhandledRejection', listener);
  try {
    await fn();
    // Node reports unhandled rejections once the microtasks after a macrotask have run.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('unhandledRejection', listener);
  }
  return seen;
}

test('a signal aborted before the race: the abort error, and the promise is listened to', async () => {
  const fenced = new TroupeError('CANCELLED', 'a/b was fenced by a newer activation');
  const signal = AbortSignal.abort(fenced);
  const unhandled = await unhandledDuring(async () => {
    const work = Promise.reject(fenced);
    await expect(raceSignal(work, signal)).rejects.toBe(fenced);
  });
  expect(unhandled).toEqual([]);
});

test('an abort during the race rejects with the reason; a later rejection is handled', async () => {
  const controller = new AbortController();
  let fail!: (err: Error) => void;
  const work = new Promise<never>((_, reject) => (fail = reject));
  const unhandled = await unhandledDuring(async () => {
    const raced = raceSignal(work, controller.signal);
    controller.abort(new TroupeError('CANCELLED', 'stop'));
    await expect(raced).rejects.toMatchObject({ code: 'CANCELLED', message: 'stop' });
    fail(new Error('the request failed later'));
  });
  expect(unhandled).toEqual([]);
});

test('without a signal the promise itself; a settled race returns its value', async () => {
  await expect(raceSignal(Promise.resolve(1), undefined)).resolves.toBe(1);
  await expect(raceSignal(Promise.resolve(2), new AbortController().signal)).resolves.toBe(2);
});
