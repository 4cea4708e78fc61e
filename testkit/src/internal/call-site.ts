/**
 * Captures the current stack, without `fn` and the frames above it, for a
 * `WaitTimeoutError` that may be created later.
 */
export function captureCallSite(fn: (...args: never[]) => unknown): string | undefined {
  const holder: { stack?: string } = {};
  Error.captureStackTrace(holder, fn);
  return holder.stack;
}
