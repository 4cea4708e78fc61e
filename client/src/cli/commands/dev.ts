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
  println(
    ctx.io.stdout,
    [
      'Troupe dev cluster ready',
      `  job API  ${cluster.address}   (token: ${cluster.tokenFile})`,
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
  await cluster.stop();
  println(ctx.io.stderr, 'stopped');
  return ExitCode.OK;
}
