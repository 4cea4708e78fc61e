import { fromAbortSignal } from '@troupe/proto';

/**
 * Resolves after `ms`, or rejects with {@link fromAbortSignal} as soon as `signal` aborts. Used
 * for backoff and rate-limit waits only, never to synchronise with work.
 */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(fromAbortSignal(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(fromAbortSignal(signal));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
