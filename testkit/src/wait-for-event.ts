import type { EventEmitter } from 'node:events';
import { abortReason } from './internal/abort';
import { captureCallSite } from './internal/call-site';
import { WaitTimeoutError } from './wait-timeout-error';

/** Options for {@link waitForEvent}. */
export interface WaitForEventOptions<A extends unknown[]> {
  /** Give up after this many milliseconds. */
  timeoutMs: number;
  /** Only an emission whose arguments pass this test settles the wait. @default accept any */
  filter?: (...args: A) => boolean;
  /** Aborts the wait; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Describes what was awaited, for the timeout message. @default `event "<name>"` */
  message?: string;
}

/**
 * Resolves with the arguments of the first `name` emission that passes `filter`. Like
 * `events.once`, an `'error'` emission rejects (unless `'error'` is the awaited event). Listeners
 * are removed however the wait ends.
 *
 * @throws {@link WaitTimeoutError} when `timeoutMs` passes; its stack names the caller.
 */
export function waitForEvent<A extends unknown[] = unknown[]>(
  emitter: EventEmitter,
  name: string | symbol,
  options: WaitForEventOptions<A>,
): Promise<A> {
  const callSite = captureCallSite(waitForEvent);
  const { timeoutMs, filter, signal, message = `event "${String(name)}"` } = options;
  return new Promise<A>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const cleanup = (): void => {
      clearTimeout(timer);
      emitter.removeListener(name, onEvent);
      if (name !== 'error') emitter.removeListener('error', onError);
      signal?.removeEventListener('abort', onAbort);
    };
    const onEvent = (...args: unknown[]): void => {
      const typed = args as A;
      try {
        if (filter && !filter(...typed)) return;
      } catch (err) {
        cleanup();
        reject(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      cleanup();
      resolve(typed);
    };
    const onError = (err: unknown): void => {
      cleanup();
      reject(err instanceof Error ? err : new Error(String(err)));
    };
    const onAbort = (): void => {
      cleanup();
      reject(abortReason(signal!));
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(
        new WaitTimeoutError(`${message} not emitted within ${timeoutMs} ms`, timeoutMs, callSite),
      );
    }, timeoutMs);
    emitter.on(name, onEvent);
    if (name !== 'error') emitter.on('error', onError);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
