/**
 * The logging surface the testkit uses: a subset of pino's API, so a pino logger (or a child of
 * one) can be passed straight in.
 */
export interface TestkitLogger {
  /** Verbose diagnostics (process spawns, readiness probes). */
  debug(obj: Record<string, unknown>, msg?: string): void;
  /** Notable lifecycle events (a daemon was started). */
  info(obj: Record<string, unknown>, msg?: string): void;
  /** Recoverable surprises (a stale lock file was removed). */
  warn(obj: Record<string, unknown>, msg?: string): void;
  /** Failures that are about to be thrown or that were swallowed during cleanup. */
  error(obj: Record<string, unknown>, msg?: string): void;
}

/** A logger that drops everything; the default wherever a logger is optional. */
export const noopLogger: TestkitLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};
