import { readFileSync } from 'node:fs';
import { DashboardServer } from '../../dashboard/dashboard-server';
import { TroupeClient } from '../../troupe-client';
import { println } from '../cli-io';
import { type CommandContext } from '../command-context';
import { dataDirOf, readDevState } from '../dev-state';
import { EmbeddedCluster } from '../embedded-cluster';
import { imageBuildProgressLine } from '../image-build-progress';
import { CliError, ExitCode } from '../exit-codes';
import { intOption } from './int-option';
import { modelsOption } from './models-option';

/** Options of `troupe dev`. */
export interface DevCommandOptions {
  port?: string;
  host?: string;
  natsPort?: string;
  cluster?: string;
  sandboxSlots?: string;
  processBackend?: boolean;
  /** Models file (`--models`, or `TROUPE_MODELS_FILE`). */
  models?: string;
  /** Skills directory pushed to the skill store (`--skills`, or `TROUPE_SKILLS_DIR`). */
  skills?: string;
  logLevel?: string;
  /** Dashboard port (`--dashboard-port`, 0 = any free port). */
  dashboardPort?: string;
  /** `--no-dashboard` sets this false. @default true */
  dashboard?: boolean;
  /** Let the dashboard cancel jobs and drain nodes. @default true in dev */
  dashboardActions?: boolean;
}

/**
 * `troupe dev`: the embedded single-machine cluster (nats-server with JetStream in the data
 * directory, a coordinator with the job API, a node agent) until Ctrl-C, which stops everything.
 */
export async function devCommand(ctx: CommandContext, opts: DevCommandOptions): Promise<number> {
  const dataDir = dataDirOf(ctx.io.cwd, ctx.global.dataDir ?? ctx.io.env['TROUPE_DATA_DIR']);
  const running = readDevState(dataDir);
  if (running) {
    throw new CliError(
      `a troupe dev cluster already runs on ${running.address} with data dir ${dataDir} (pid ${running.pid})`,
      ExitCode.USAGE,
    );
  }
  const grpcPort = intOption('--port', opts.port);
  const natsPort = intOption('--nats-port', opts.natsPort);
  const sandboxSlots = intOption('--sandbox-slots', opts.sandboxSlots);
  const dashboardPort = intOption('--dashboard-port', opts.dashboardPort);
  println(ctx.io.stderr, `starting the dev cluster (data dir ${dataDir}) …`);
  const cluster = await EmbeddedCluster.start({
    dataDir,
    ...(opts.cluster ? { cluster: opts.cluster } : {}),
    ...(grpcPort !== undefined ? { grpcPort } : {}),
    ...(opts.host ? { grpcHost: opts.host } : {}),
    ...(natsPort !== undefined ? { natsPort } : {}),
    ...(sandboxSlots !== undefined ? { sandboxSlots } : {}),
    ...(opts.processBackend ? { processBackend: true } : {}),
    ...modelsOption(ctx, opts.models, opts.skills),
    ...(opts.logLevel ? { logLevel: opts.logLevel } : {}),
    onImageBuildProgress: (line) => {
      const shown = imageBuildProgressLine(line);
      if (shown !== undefined) println(ctx.io.stderr, shown);
    },
  });
  let dashboard: { server: DashboardServer; client: TroupeClient } | undefined;
  if (opts.dashboard !== false) {
    const token = readFileSync(cluster.tokenFile, 'utf8').trim();
    const client = new TroupeClient({ address: cluster.address, token });
    const server = await DashboardServer.start({
      api: client,
      token,
      port: dashboardPort ?? 0,
      host: opts.host ?? '127.0.0.1',
      allowActions: opts.dashboardActions !== false,
    }).catch(async (err: unknown) => {
      client.close();
      await cluster.stop();
      throw err;
    });
    dashboard = { server, client };
  }
  println(
    ctx.io.stdout,
    [
      'Troupe dev cluster ready',
      `  job API  ${cluster.address}   (token: ${cluster.tokenFile})`,
      ...(dashboard ? [`  web      ${dashboard.server.url}   (log in with the token)`] : []),
      `  NATS     ${cluster.natsUrl}`,
      `  data     ${dataDir}   (log: troupe.log)`,
      'Submit a job with `troupe submit <spec> --watch` from this directory. Ctrl-C stops the cluster.',
    ].join('\n'),
  );
  await new Promise<void>((resolve) => {
    if (ctx.signal.aborted) resolve();
    else ctx.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  println(ctx.io.stderr, 'stopping the dev cluster …');
  await dashboard?.server.stop();
  dashboard?.client.close();
  await cluster.stop();
  println(ctx.io.stderr, 'stopped');
  return ExitCode.OK;
}
