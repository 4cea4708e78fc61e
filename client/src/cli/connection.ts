import { readFileSync } from 'node:fs';
import { DEFAULT_GRPC_PORT } from '@troupe/coordinator';
import { type TroupeClientOptions } from '../troupe-client';
import { type CliIo } from './cli-io';
import { dataDirOf, readDevState } from './dev-state';
import { CliError, ExitCode } from './exit-codes';

/** The global options every command accepts. */
export interface GlobalOptions {
  address?: string;
  token?: string;
  tokenFile?: string;
  tlsCa?: string;
  timeout?: string;
  dataDir?: string;
}

function readText(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new CliError(`cannot read ${what} ${file}: ${(err as Error).message}`, ExitCode.USAGE, {
      cause: err,
    });
  }
}

/**
 * Where and how to reach the job API: flags first, then `TROUPE_ADDRESS` / `TROUPE_TOKEN` /
 * `TROUPE_TOKEN_FILE` / `TROUPE_TLS_CA`, then the running `troupe dev` cluster of the data
 * directory, then `127.0.0.1:50051` without a token.
 */
export function clientOptions(opts: GlobalOptions, io: CliIo): TroupeClientOptions {
  const dev = readDevState(dataDirOf(io.cwd, opts.dataDir ?? io.env['TROUPE_DATA_DIR']));
  const address =
    opts.address ?? io.env['TROUPE_ADDRESS'] ?? dev?.address ?? `127.0.0.1:${DEFAULT_GRPC_PORT}`;
  const tokenFile = opts.tokenFile ?? io.env['TROUPE_TOKEN_FILE'];
  const token =
    opts.token ??
    (tokenFile ? readText(tokenFile, 'token file') : undefined) ??
    io.env['TROUPE_TOKEN'] ??
    (dev ? readText(dev.tokenFile, 'token file') : undefined);
  const ca = opts.tlsCa ?? io.env['TROUPE_TLS_CA'];
  const timeoutMs = opts.timeout === undefined ? undefined : Number(opts.timeout);
  if (timeoutMs !== undefined && !(Number.isInteger(timeoutMs) && timeoutMs > 0)) {
    throw new CliError(`--timeout must be a positive number of milliseconds`, ExitCode.USAGE);
  }
  return {
    address,
    ...(token ? { token } : {}),
    ...(ca ? { tls: { ca: readText(ca, 'CA file') } } : {}),
    ...(timeoutMs ? { timeoutMs } : {}),
  };
}
