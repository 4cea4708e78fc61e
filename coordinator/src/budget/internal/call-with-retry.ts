import { setTimeout as sleep } from 'node:timers/promises';
import { fromAbortSignal, isRetryable, isTimeout, TroupeError } from '@troupe/proto';

/** Options of {@link callWithRetry}. */
export interface CallWithRetryOptions {
  /** Deadline of the whole call, retries included. */
  timeoutMs: number;
  /** Cancels the call and any pause between attempts. */
  signal?: AbortSignal | undefined;
}

/**
 * Runs `attempt` (given the time left) until it succeeds, retrying errors that are retryable —
 * e.g. `UNAVAILABLE` from an activation that was passivating or moved to another host — with a
 * short backoff, all within `timeoutMs`. A `TIMEOUT` is not retried: the attempt already used the
 * whole deadline. Only for idempotent operations.
 */
export async function callWithRetry<T>(
  attempt: (timeoutMs: number) => Promise<T>,
  options: CallWithRetryOptions,
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  for (let n = 0; ; n++) {
    if (options.signal?.aborted) throw fromAbortSignal(options.signal);
    try {
      return await attempt(Math.max(1, deadline - Date.now()));
    } catch (err) {
      if (!isRetryable(err) || isTimeout(err)) throw err;
      const pauseMs = Math.min(250, 10 * 2 ** n);
      if (Date.now() + pauseMs >= deadline) throw err;
      try {
        await sleep(pauseMs, undefined, options.signal ? { signal: options.signal } : {});
      } catch (abort) {
        if (options.signal?.aborted) throw fromAbortSignal(options.signal);
        throw new TroupeError('INTERNAL', 'retry pause failed', { cause: abort });
      }
    }
  }
}
