import { fromAbortSignal } from '@troupe/proto';

interface Waiter {
  grant: () => void;
  reject: (err: unknown) => void;
}

/**
 * A counting semaphore with FIFO hand-off and abortable waits. A released slot goes straight to
 * the oldest waiter, so a burst of new callers cannot starve queued ones.
 */
export class Semaphore {
  private available: number;
  private readonly waiters: Waiter[] = [];

  /** @param limit - slots, ≥ 1 */
  constructor(readonly limit: number) {
    this.available = limit;
  }

  /** Slots currently held. */
  get inUse(): number {
    return this.limit - this.available;
  }

  /** Callers waiting for a slot. */
  get queued(): number {
    return this.waiters.length;
  }

  /**
   * Waits for a slot; rejects with the signal's error if `signal` aborts first (the slot is then
   * not taken). Returns the function that gives the slot back (idempotent).
   */
  acquire(signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(fromAbortSignal(signal));
    if (this.available > 0) {
      this.available -= 1;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          resolve(this.releaser());
        },
        reject,
      };
      const onAbort = (): void => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(fromAbortSignal(signal));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next !== undefined) next.grant();
      else this.available += 1;
    };
  }
}
