import { TroupeError, cancelledError } from '@troupe/proto';

/** Throws {@link abortError} when `signal` is aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortError(signal);
}

/** The error an aborted call fails with: the signal's reason as a TroupeError. */
export function abortError(signal: AbortSignal): TroupeError {
  const reason: unknown = signal.reason;
  if (reason instanceof TroupeError) return reason;
  if (reason instanceof Error && reason.name === 'TimeoutError') {
    return new TroupeError('TIMEOUT', 'operation timed out', { cause: reason });
  }
  return cancelledError(typeof reason === 'string' ? reason : 'user');
}

/**
 * Races a promise with an abort signal (NATS requests take no signal of their own). `p` is
 * always listened to, also when the signal was aborted before the race.
 */
export async function withAbort<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) {
    // `p` is already on its way and may reject (one that checks the same signal does at once):
    // nobody else will listen to it, and an unhandled rejection ends the process.
    p.catch(() => undefined);
    throw abortError(signal);
  }
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([p, aborted]);
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}
