import { abortReason, delay, raceSignal } from './internal/abort';
import { captureCallSite } from './internal/call-site';
import { WaitTimeoutError } from './wait-timeout-error';

/** Values `waitFor` treats as "not yet". */
type Falsy = false | 0 | 0n | '' | null | undefined;

/** Options for {@link waitFor}. */
export interface WaitForOptions {
  /** Give up after this many milliseconds. */
  timeoutMs: number;
  /** Pause between two evaluations of the predicate. @default 20 */
  intervalMs?: number;
  /** Aborts the wait; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Describes what was awaited; becomes the start of the timeout error's message. @default 'condition' */
  message?: string;
}

/**
 * Evaluates `predicate` until it returns (or resolves to) a truthy value and returns that value.
 * A predicate that throws counts as "not yet"; its last error becomes the `cause` of the timeout.
 * Each evaluation gets a signal that aborts when the wait ends, and a predicate that hangs past
 * the deadline does not delay the timeout.
 *
 * @throws {@link WaitTimeoutError} when `timeoutMs` passes; its stack names the caller.
 */
export async function waitFor<T>(
  predicate: (signal: AbortSignal) => T | Promise<T>,
  options: WaitForOptions,
): Promise<Exclude<T, Falsy>> {
  const callSite = captureCallSite(waitFor);
  const { timeoutMs, intervalMs = 20, signal, message = 'condition' } = options;
  if (!(timeoutMs >= 0)) throw new RangeError(`waitFor: timeoutMs must be >= 0, got ${timeoutMs}`);
  if (signal?.aborted) throw abortReason(signal);

  const done = new AbortController();
  const deadline = signal ? AbortSignal.any([signal, done.signal]) : done.signal;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    done.abort(new Error('waitFor deadline'));
  }, timeoutMs);

  // raceSignal turns anything thrown into an Error.
  let lastError: Error | undefined;
  let attempts = 0;
  try {
    for (;;) {
      attempts += 1;
      try {
        const value = await raceSignal(
          Promise.resolve().then(() => predicate(deadline)),
          deadline,
        );
        if (value) return value as Exclude<T, Falsy>;
      } catch (err) {
        if (deadline.aborted) break;
        lastError = err as Error;
      }
      if (deadline.aborted) break;
      try {
        await delay(intervalMs, deadline);
      } catch {
        break;
      }
    }
  } finally {
    clearTimeout(timer);
    done.abort(new Error('waitFor finished'));
  }
  if (!timedOut && signal?.aborted) throw abortReason(signal);
  const last = lastError === undefined ? '' : `; last error: ${lastError.message}`;
  throw new WaitTimeoutError(
    `${message} not met within ${timeoutMs} ms (${attempts} attempts)${last}`,
    timeoutMs,
    callSite,
    lastError,
  );
}
