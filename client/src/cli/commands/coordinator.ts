import { registerBuiltinDrivers } from '@troupe/benchmarks';
import { applyEnvironment, ConfigSchema, Coordinator, DriverRegistry } from '@troupe/coordinator';
import { type CommandContext } from '../command-context';
import { ModelHosting } from '../model-hosting';
import { runServerCommand } from '../run-server-command';
import { modelsOption } from './models-option';

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
  return runServerCommand(ctx, {
    app: 'troupe-coordinator',
    ...(opts.config ? { configFile: opts.config } : {}),
    schema: ConfigSchema,
    applyEnvironment,
    // The job API is what this entry is for: serve it, so a missing token is a config error.
    defaults: (raw) => ({ ...raw, grpc: raw['grpc'] ?? {} }),
    ...(opts.readyFile ? { readyFile: opts.readyFile } : {}),
    start: async (config, logger) => {
      const { modelsFile, env, skillsDir } = modelsOption(ctx, opts.models);
      const models = modelsFile
        ? ModelHosting.load({
            modelsFile,
            ...(skillsDir ? { skillsDir } : {}),
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
      return {
        grpcPort: coordinator.grpcPort,
        stop: async () => {
          logger.info({ graceMs: config.shutdownGraceMs }, 'coordinator stopping');
          await models?.stop(config.shutdownGraceMs);
          await coordinator.stop();
          logger.info({}, 'coordinator stopped');
        },
      };
    },
    ready: (server) => JSON.stringify({ pid: process.pid, grpcPort: server.grpcPort }),
  });
}
