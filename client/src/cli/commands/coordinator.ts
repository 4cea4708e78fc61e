import { registerBuiltinDrivers } from '@troupe/benchmarks';
import { applyEnvironment, ConfigSchema, Coordinator, DriverRegistry } from '@troupe/coordinator';
import { pino } from 'pino';
import { type CommandContext } from '../command-context';
import { ExitCode } from '../exit-codes';
import { ModelHosting } from '../model-hosting';
import { ReadyFile } from '../ready-file';
import { loadServerConfig } from '../server-config';
import { modelsOption } from './models-option';
import { untilAborted } from './until-aborted';

/** Options of `troupe coordinator`. */
export interface CoordinatorCommandOptions {
  /** YAML config file (the coordinator's `ConfigSchema`). */
  config?: string;
  /** A file written once serving and removed on stop (for health checks). */
  readyFile?: string;
  /** Models file (`--models`, or `TROUPE_MODELS_FILE`): host agent sessions, LLM operators. */
  models?: string;
}

/**
 * `troupe coordinator`: the deployable coordinator: the built-in job drivers and the gRPC job API
 * (bearer token required: `grpc.token`/`grpc.tokenFile` or `TROUPE_GRPC_TOKEN[_FILE]`). Config
 * from `--config` and the environment (see the coordinator's `applyEnvironment`); logs pino JSON
 * on stdout; SIGTERM/SIGINT stop taking work, let running turns finish for `shutdownGraceMs`,
 * then close.
 */
export async function coordinatorCommand(
  ctx: CommandContext,
  opts: CoordinatorCommandOptions,
): Promise<number> {
  const config = loadServerConfig({
    ...(opts.config ? { file: opts.config } : {}),
    env: ctx.io.env,
    schema: ConfigSchema,
    applyEnvironment,
    // The job API is what this entry is for: serve it, so a missing token is a config error.
    defaults: (raw) => ({ ...raw, grpc: raw['grpc'] ?? {} }),
  });
  const logger = pino(
    { level: config.logLevel, base: { app: 'troupe-coordinator' } },
    pino.destination({ fd: 1, sync: true }),
  );
  const ready = new ReadyFile(opts.readyFile);
  const { modelsFile, env } = modelsOption(ctx, opts.models);
  const models = modelsFile
    ? ModelHosting.load({
        modelsFile,
        cluster: config.cluster,
        nats: config.nats,
        hostId: `${config.coordinatorId ?? `coord-${process.pid}`}-agents`,
        replicas: config.replicas,
        env: env ?? {},
        logger: logger.child({ component: 'agents' }),
      })
    : undefined;
  const coordinator = await Coordinator.start(config, {
    logger,
    drivers: registerBuiltinDrivers(new DriverRegistry(), models?.driverOptions() ?? {}),
  });
  await models?.startAgentHost();
  logger.info(
    {
      cluster: config.cluster,
      grpcPort: coordinator.grpcPort,
      grpcHost: config.grpc?.host,
      metricsPort: coordinator.metricsPort,
    },
    'coordinator serving the job API',
  );
  ready.mark(JSON.stringify({ pid: process.pid, grpcPort: coordinator.grpcPort }));
  await untilAborted(ctx.signal);
  ready.clear();
  logger.info({ graceMs: config.shutdownGraceMs }, 'coordinator stopping');
  await models?.stop(config.shutdownGraceMs);
  await coordinator.stop();
  logger.info({}, 'coordinator stopped');
  return ExitCode.OK;
}
