import type { Logger } from '@troupe/actors';

export type { Logger };

/** A logger that drops everything; the default wherever a logger is optional. */
export const noopLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => noopLogger,
};
