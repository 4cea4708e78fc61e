import { errorCode } from '@troupe/proto';

/**
 * Exit codes of the `troupe` CLI (documented in docs/cli.md). A job that ran to completion exits
 * 0 whatever its pass rate; a job that did not (FAILED, CANCELLED) exits 1.
 */
export const ExitCode = {
  /** Done; a watched or run job SUCCEEDED (every task reached a final status). */
  OK: 0,
  /** The job ended FAILED or CANCELLED. */
  JOB_NOT_COMPLETED: 1,
  /** Bad command line, or a file that cannot be read or written. */
  USAGE: 2,
  /** The server refused the input: an invalid spec, job id or argument. */
  INVALID: 3,
  /** No such job, artifact or node. */
  NOT_FOUND: 4,
  /** Missing or wrong token, or not allowed. */
  AUTH: 5,
  /** The server cannot be reached (or the embedded cluster failed to start); timeouts. */
  UNAVAILABLE: 6,
  /** Any other failure. */
  ERROR: 7,
  /** Interrupted (Ctrl-C). */
  INTERRUPTED: 130,
} as const;
/** One of {@link ExitCode}. */
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** An error the CLI reports as one line with a chosen exit code. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'CliError';
  }
}

/** The exit code for any error. */
export function exitCodeOf(err: unknown): ExitCode {
  if (err instanceof CliError) return err.exitCode;
  switch (errorCode(err)) {
    case 'INVALID_ARGUMENT':
    case 'ALREADY_EXISTS':
      return ExitCode.INVALID;
    case 'NOT_FOUND':
      return ExitCode.NOT_FOUND;
    case 'UNAUTHENTICATED':
    case 'PERMISSION_DENIED':
      return ExitCode.AUTH;
    case 'UNAVAILABLE':
    case 'TIMEOUT':
    case 'BUSY':
      return ExitCode.UNAVAILABLE;
    case 'CANCELLED':
      return ExitCode.INTERRUPTED;
    default:
      return ExitCode.ERROR;
  }
}

/** An error as one line: its message's first line, without the stack. */
export function oneLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return (text.split('\n')[0] ?? text).trim() || 'unknown error';
}
