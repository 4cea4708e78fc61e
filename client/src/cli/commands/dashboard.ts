import { println } from '../cli-io';
import { type CommandContext } from '../command-context';
import { clientOptions } from '../connection';
import { CliError, ExitCode } from '../exit-codes';
import { DashboardServer } from '../../dashboard/dashboard-server';
import { TroupeClient } from '../../troupe-client';
import { intOption } from './int-option';

/** Options of `troupe dashboard`. */
export interface DashboardCommandOptions {
  port?: string;
  host?: string;
  /** Let logged-in users cancel jobs and drain nodes. */
  actions?: boolean;
  secureCookie?: boolean;
}

/**
 * `troupe dashboard`: serves the live web dashboard against the cluster the global options point
 * at (the dev cluster by default), until Ctrl-C. The login page takes the same bearer token.
 */
export async function dashboardCommand(
  ctx: CommandContext,
  opts: DashboardCommandOptions,
): Promise<number> {
  const port = intOption('--port', opts.port) ?? 8470;
  const options = clientOptions(ctx.global, ctx.io);
  if (!options.token) {
    throw new CliError(
      'the dashboard needs the job API token (--token, --token-file, TROUPE_TOKEN or a running troupe dev): its login page accepts exactly that token',
      ExitCode.USAGE,
    );
  }
  const client = new TroupeClient(options);
  const dashboard = await DashboardServer.start({
    api: client,
    token: options.token,
    port,
    host: opts.host ?? '127.0.0.1',
    allowActions: opts.actions === true,
    secureCookie: opts.secureCookie === true,
  });
  println(
    ctx.io.stdout,
    `Troupe dashboard on ${dashboard.url} (job API ${options.address}; ${opts.actions ? 'cancel/drain enabled' : 'read-only'}). Log in with the job API token. Ctrl-C stops it.`,
  );
  await new Promise<void>((resolve) => {
    if (ctx.signal.aborted) resolve();
    else ctx.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await dashboard.stop();
  client.close();
  return ExitCode.OK;
}
