import { whileJetStreamStarts } from '../../src/internal/while-jetstream-starts';

function natsError(name: string, message: string): Error {
  const err = new Error(message);
  err.name = name;
  return err;
}

test('retries while JetStream does not answer yet, then returns the answer', async () => {
  let calls = 0;
  const answer = await whileJetStreamStarts(async () => {
    calls++;
    if (calls < 3) throw natsError('TimeoutError', 'timeout');
    return 'created';
  }, 10_000);
  expect({ answer, calls }).toEqual({ answer: 'created', calls: 3 });
});

test('an error that says the request is wrong is thrown at once', async () => {
  let calls = 0;
  const wrong = natsError('JetStreamApiError', 'stream name already in use');
  await expect(
    whileJetStreamStarts(async () => {
      calls++;
      throw wrong;
    }, 10_000),
  ).rejects.toBe(wrong);
  expect(calls).toBe(1);
});

test('gives up with the last transient error once the wait is over', async () => {
  let calls = 0;
  const failure = await whileJetStreamStarts(async () => {
    calls++;
    throw natsError('TimeoutError', `timeout ${calls}`);
  }, 350).catch((err: unknown) => err as Error);
  // Pauses of 100 and 200 ms fit in 350 ms, the next (400 ms) does not: 3 calls, fewer on a
  // machine slow enough to push the second pause past the deadline. The last error is thrown.
  expect(calls).toBeGreaterThanOrEqual(2);
  expect(calls).toBeLessThanOrEqual(3);
  expect(failure.message).toBe(`timeout ${calls}`);
});
