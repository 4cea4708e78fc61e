/**
 * Thrown by {@link waitFor} and {@link waitForEvent} when the deadline passes. It is created with
 * the stack of the call that started the wait, so the stack names the waiter rather than a timer
 * callback. `cause` holds the predicate's last error, if it threw.
 */
export class WaitTimeoutError extends Error {
  /** The deadline that passed, in milliseconds. */
  readonly timeoutMs: number;
  /** Always `'TIMEOUT'`, so callers can identify the error by code. */
  readonly code = 'TIMEOUT';
  /** Timeouts are worth retrying by a caller that has more time. */
  readonly retryable = true;

  /**
   * @param callSiteStack - A stack captured when the wait began; replaces this error's frames.
   * @param cause - The last error seen while waiting.
   */
  constructor(
    message: string,
    timeoutMs: number,
    callSiteStack: string | undefined,
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'WaitTimeoutError';
    this.timeoutMs = timeoutMs;
    if (callSiteStack !== undefined) {
      // Keep the frames captured when the wait began; drop their (empty) header line.
      const frames = callSiteStack.split('\n').slice(1).join('\n');
      this.stack = `${this.name}: ${this.message}\n${frames}`;
    }
  }
}
