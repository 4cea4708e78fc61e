import {
  loadServerConfig as loadConfig,
  type LoadServerConfigOptions,
  serverConfigProblems,
} from '@troupe/proto';
import { type z } from 'zod';
import { CliError, ExitCode } from './exit-codes';

/**
 * The `@troupe/proto` server config loader (file, then environment, then the server's schema)
 * for `troupe coordinator|node-agent`: its error (every problem, each named by its field or
 * variable) becomes one {@link CliError} with the USAGE exit code, before any connection is
 * opened.
 */
export function loadServerConfig<S extends z.ZodType>(
  options: LoadServerConfigOptions<S>,
): z.output<S> {
  try {
    return loadConfig(options);
  } catch (err) {
    if (serverConfigProblems(err) === undefined) throw err;
    throw new CliError((err as Error).message, ExitCode.USAGE, { cause: err });
  }
}
