import { fromAbortSignal } from '@troupe/proto';

/** A counting semaphore: at most `limit` holders; waiters are served in order. */
export class Gate {
  private held = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(readonly limit: number) {}

  /** Holders now. */
  get size(): number {
    return this.held;
  }

  /** Waits for a place; resolves with its release function (idempotent). */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    if (this.held >= this.limit) {
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => {
          const i = this.waiters.indexOf(go);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(fromAbortSignal(signal as AbortSignal));
        };
        const go = (): void => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        if (signal?.aborted) {
          onAbort();
          return;
        }
        signal?.addEventListener('abort', onAbort, { once: true });
        this.waiters.push(go);
      });
    } else {
      this.held += 1;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next) next();
      else this.held -= 1;
    };
  }
}
