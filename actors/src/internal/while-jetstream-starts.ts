import { retryWithBackoff } from '@troupe/proto';
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
export function whileJetStreamStarts<T>(
  call: () => Promise<T>,
  waitMs: number = JETSTREAM_START_WAIT_MS,
): Promise<T> {
  return retryWithBackoff(call, {
    isRetryable: isTransientNatsError,
    untilMs: Date.now() + waitMs,
    firstPauseMs: 100,
    unref: true,
  });
}
