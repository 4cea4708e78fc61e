/**
 * The logging contract every Troupe library accepts: a subset of pino's API, so an app passes
 * `pino()` (or a child of it) and tests pass nothing. Libraries never import pino or use console.
 * Declared once here; `@troupe/actors` and `@troupe/node-agent` re-export it.
 */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

/** A logger that drops everything; the default when none is injected. */
export const noopLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => noopLogger,
};
