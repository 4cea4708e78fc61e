import type { Logger } from '@troupe/node-agent';

/** A {@link Logger} that keeps the messages of warnings and errors, for tests to look for. */
export interface RecordingLogger extends Logger {
  /** The message of every `warn`, in order. */
  readonly warnings: string[];
  /** The message of every `error`, in order. */
  readonly errors: string[];
}

/** A {@link RecordingLogger}; debug and info lines are dropped, children log to it. */
export function recordingLogger(): RecordingLogger {
  const warnings: string[] = [];
  const errors: string[] = [];
  const logger: RecordingLogger = {
    warnings,
    errors,
    debug: () => undefined,
    info: () => undefined,
    warn: (_obj: object, msg?: string) => void warnings.push(msg ?? ''),
    error: (_obj: object, msg?: string) => void errors.push(msg ?? ''),
    child: () => logger,
  };
  return logger;
}
