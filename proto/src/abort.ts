import { fromAbortSignal } from './errors';

// The abort primitives every package uses; all of them turn an abort into the Troupe error of
// `fromAbortSignal` (the signal's reason when it identifies itself, else `CANCELLED`).

/** Throws the Troupe error for an aborted signal (its reason when it identifies itself). */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw fromAbortSignal(signal);
}

/**
 * Settles with `promise`, or rejects as soon as `signal` aborts (the promise keeps running; the
 * caller is responsible for cleaning up after it). Without a signal, `promise` itself.
 */
export function raceSignal<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(fromAbortSignal(signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(fromAbortSignal(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- pass on what was thrown
        reject(e);
      },
    );
  });
}

/** Options of {@link delay}. */
export interface DelayOptions {
  /**
   * Whether the timer may not keep the process alive (a backoff in a background loop).
   * @default false
   */
  unref?: boolean;
}

/**
 * Resolves after `ms`, or rejects with {@link fromAbortSignal} as soon as `signal` aborts. For
 * backoff, polling and rate-limit waits only, never to synchronise with work.
 */
export function delay(ms: number, signal?: AbortSignal, options: DelayOptions = {}): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(fromAbortSignal(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(fromAbortSignal(signal as AbortSignal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    if (options.unref === true) timer.unref();
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
