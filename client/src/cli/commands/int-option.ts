import { CliError, ExitCode } from '../exit-codes';

/** A non-negative integer option, or undefined when absent; a usage error otherwise. */
export function intOption(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) {
    throw new CliError(`${name} must be a non-negative integer (got ${value})`, ExitCode.USAGE);
  }
  return n;
}
