import { isTransientNatsError } from '@troupe/actors';
import { delay } from '@troupe/proto';

/**
 * `fn`, tried again while it fails with a transient error (by default a transient NATS error: a
 * server restarting, a stream electing a leader, a request timed out), pausing 250 ms doubling
 * to 2 s, for up to `giveUpAfterMs`; then, or for any other error, its error. `signal` stops
 * the pauses.
 */
export async function whileTransient<T>(
  fn: () => Promise<T>,
  signal?: AbortSignal,
  options: { giveUpAfterMs?: number; isTransient?: (err: unknown) => boolean } = {},
): Promise<T> {
  const giveUpAt = Date.now() + (options.giveUpAfterMs ?? 30_000);
  const isTransient = options.isTransient ?? isTransientNatsError;
  for (let pause = 250; ; pause = Math.min(pause * 2, 2_000)) {
    try {
      return await fn();
    } catch (err) {
      if (!isTransient(err) || Date.now() + pause > giveUpAt) throw err;
    }
    await delay(pause, signal);
  }
}
