/** What {@link timed} measured: how long the operation took, and what it failed with, if it did. */
export interface Timed {
  /** The rejection reason; undefined when the operation succeeded. */
  err: unknown;
  /** Milliseconds from the call to its settling (`performance.now()` clock). */
  ms: number;
}

/**
 * Runs `op` and reports how long it took to settle and what it rejected with, without throwing:
 * for a test that asserts how soon a call fails (a request nobody answers giving up after its
 * timeout, not the client's default).
 */
export async function timed(op: () => Promise<unknown>): Promise<Timed> {
  const t0 = performance.now();
  const err = await op().then(
    () => undefined,
    (e: unknown) => e,
  );
  return { err, ms: performance.now() - t0 };
}
