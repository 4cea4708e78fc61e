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

/** A signal that aborts when any of its sources does, until {@link LinkedSignal.dispose}. */
export interface LinkedSignal {
  readonly signal: AbortSignal;
  /** Stops following the sources (their listeners are removed; the signal stays as it is). */
  dispose(): void;
}

/**
 * What `AbortSignal.any(sources)` gives, with listeners removed by `dispose()` when the work it
 * guards ends: for a per-task signal on a hot path. Node 20's `AbortSignal.any` keeps weak
 * references to its result on every source, and in a profile of a job of trivial tasks it cost
 * 1.6 % of the process's CPU, one per attempt.
 */
export function linkSignals(sources: readonly AbortSignal[]): LinkedSignal {
  const controller = new AbortController();
  const aborted = sources.find((s) => s.aborted);
  if (aborted) {
    controller.abort(aborted.reason);
    return { signal: controller.signal, dispose: () => undefined };
  }
  const listeners = sources.map((source) => {
    const onAbort = (): void => {
      dispose();
      controller.abort(source.reason);
    };
    source.addEventListener('abort', onAbort, { once: true });
    return { source, onAbort };
  });
  const dispose = (): void => {
    for (const { source, onAbort } of listeners) source.removeEventListener('abort', onAbort);
  };
  return { signal: controller.signal, dispose };
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

/** Options of {@link retryWithBackoff}. */
export interface RetryWithBackoffOptions {
  /** Whether a failure is worth another try (any other is thrown at once). */
  isRetryable: (err: unknown) => boolean;
  /**
   * No pause that would end after this time (`Date.now()` clock): the last failure is thrown
   * (unless {@link RetryWithBackoffOptions.clipLastPause}).
   */
  untilMs: number;
  /** The first pause, doubled after each failure. @default 250 */
  firstPauseMs?: number;
  /** The longest pause. @default 2000 */
  maxPauseMs?: number;
  /** Stops the pauses (rejects as {@link delay} does). */
  signal?: AbortSignal;
  /** Pauses that do not keep the process alive. @default false */
  unref?: boolean;
  /**
   * Instead of giving up when the next pause would end after `untilMs`, shorten that pause to end
   * at `untilMs` (not before it on the `Date.now()` clock), try `fn` once more, and throw its
   * failure only then: for a wait whose caller was promised the whole of `untilMs`, such as a
   * wait for a daemon to come back. A failure at or after `untilMs` is thrown at once.
   * @default false
   */
  clipLastPause?: boolean;
}

/**
 * `fn`, tried again after each retryable failure with a pause doubling from `firstPauseMs` to
 * `maxPauseMs`, while a pause still ends before `untilMs` (with `clipLastPause`, a last pause
 * ending at `untilMs` and a last try): the one backoff loop behind the runtime's waits for
 * JetStream to start, the job layer's reads through an outage, the node agent's posts through one
 * and its waits for the Docker daemon.
 */
export async function retryWithBackoff<T>(
  fn: () => Promise<T>,
  options: RetryWithBackoffOptions,
): Promise<T> {
  const { isRetryable, untilMs, signal, unref = false, clipLastPause = false } = options;
  const maxPauseMs = options.maxPauseMs ?? 2_000;
  let lastTry = false;
  for (let pauseMs = options.firstPauseMs ?? 250; ; pauseMs = Math.min(pauseMs * 2, maxPauseMs)) {
    try {
      return await fn();
    } catch (err) {
      if (!isRetryable(err) || lastTry) throw err;
      const leftMs = untilMs - Date.now();
      if (clipLastPause ? leftMs <= 0 : pauseMs > leftMs) throw err;
      lastTry = clipLastPause && pauseMs >= leftMs;
    }
    if (!lastTry) {
      await delay(pauseMs, signal, { unref });
    } else {
      // A timer may fire a millisecond early on the Date.now() clock: the last try is never
      // before untilMs.
      do {
        await delay(Math.max(untilMs - Date.now(), 0), signal, { unref });
      } while (Date.now() < untilMs);
    }
  }
}
