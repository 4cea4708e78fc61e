import { delay } from '@troupe/proto';
import { isTransientNatsError } from './nats-errors';

/**
 * How long set-up calls (creating streams, buckets and object stores) keep retrying while
 * JetStream is not answering yet: a cluster whose servers have just started elects its meta
 * leader first, and a process started beside it would otherwise exit on its first timeout.
 */
export const JETSTREAM_START_WAIT_MS = 30_000;

/**
 * Runs `call`, retrying it with backoff (100 ms doubling to 2 s) while it fails with a transient
 * NATS error (a timeout, no responders, JetStream "temporarily unavailable"), for at most
 * `waitMs`; then the last error is thrown. Any other error is thrown at once.
 */
export async function whileJetStreamStarts<T>(
  call: () => Promise<T>,
  waitMs: number = JETSTREAM_START_WAIT_MS,
): Promise<T> {
  const deadline = Date.now() + waitMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const pauseMs = Math.min(2_000, 100 * 2 ** attempt);
      if (!isTransientNatsError(err) || Date.now() + pauseMs > deadline) throw err;
      await delay(pauseMs, undefined, { unref: true });
    }
  }
}
