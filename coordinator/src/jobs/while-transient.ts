import { isTransientNatsError } from '@troupe/actors';
import { retryWithBackoff } from '@troupe/proto';

/**
 * `fn`, tried again while it fails with a transient error (by default a transient NATS error: a
 * server restarting, a stream electing a leader, a request timed out), pausing 250 ms doubling
 * to 2 s, for up to `giveUpAfterMs`; then, or for any other error, its error. `signal` stops
 * the pauses.
 */
export function whileTransient<T>(
  fn: () => Promise<T>,
  signal?: AbortSignal,
  options: { giveUpAfterMs?: number; isTransient?: (err: unknown) => boolean } = {},
): Promise<T> {
  return retryWithBackoff(fn, {
    isRetryable: options.isTransient ?? isTransientNatsError,
    untilMs: Date.now() + (options.giveUpAfterMs ?? 30_000),
    ...(signal ? { signal } : {}),
  });
}
