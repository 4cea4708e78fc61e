import { fromAbortSignal } from '@troupe/proto';

/** Throws the Troupe error for an aborted signal (its reason when it identifies itself). */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw fromAbortSignal(signal);
}

/**
 * Settles with `promise`, or rejects as soon as `signal` aborts (the promise keeps running; the
 * caller is responsible for cleaning up after it).
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

/** Resolves after `ms`, or rejects when `signal` aborts first. */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
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
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The signals combined, ignoring absent ones (`undefined` when there are none). */
export function anySignal(...signals: (AbortSignal | undefined)[]): AbortSignal | undefined {
  const present = signals.filter((s): s is AbortSignal => s !== undefined);
  if (present.length <= 1) return present[0];
  return AbortSignal.any(present);
}

/** `promise`'s value, or `undefined` when `ms` pass first (the timer is cleared either way). */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}
