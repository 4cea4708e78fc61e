import { registerBuiltinDrivers } from '@troupe/benchmarks';
import {
  applyEnvironment,
  ConfigSchema,
  Coordinator,
  type CoordinatorConfig,
  DriverRegistry,
} from '@troupe/coordinator';
import { readFileSync } from 'node:fs';
import { DashboardServer } from '../../dashboard/dashboard-server';
import { TroupeClient } from '../../troupe-client';
import { type CommandContext } from '../command-context';
import { CliError, ExitCode } from '../exit-codes';
import { intOption } from './int-option';
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
  /** `--dashboard-port`: also serve the web dashboard (off when absent). */
  dashboardPort?: string;
  /** `--dashboard-host`. @default 127.0.0.1 */
  dashboardHost?: string;
  /** `--dashboard-actions`: dashboard users may cancel jobs and drain nodes. */
  dashboardActions?: boolean;
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
  const dashboardPort = intOption('--dashboard-port', opts.dashboardPort);
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
      const dashboardToken = dashboardPort === undefined ? undefined : dashboardTokenOf(config);
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
      let dashboard: { server: DashboardServer; client: TroupeClient } | undefined;
      if (dashboardPort !== undefined && dashboardToken !== undefined) {
        const token = dashboardToken;
        const client = new TroupeClient({ address: `127.0.0.1:${coordinator.grpcPort}`, token });
        const server = await DashboardServer.start({
          api: client,
          token,
          port: dashboardPort,
          host: opts.dashboardHost ?? '127.0.0.1',
          allowActions: opts.dashboardActions === true,
          logger,
        });
        dashboard = { server, client };
        logger.info({ url: server.url }, 'coordinator serving the web dashboard');
      }
      return {
        grpcPort: coordinator.grpcPort,
        stop: async () => {
          logger.info({ graceMs: config.shutdownGraceMs }, 'coordinator stopping');
          await dashboard?.server.stop();
          dashboard?.client.close();
          await models?.stop(config.shutdownGraceMs);
          await coordinator.stop();
          logger.info({}, 'coordinator stopped');
        },
      };
    },
    ready: (server) => JSON.stringify({ pid: process.pid, grpcPort: server.grpcPort }),
  });
}

/**
 * The token the embedded dashboard logs in with and calls its own job API with; checked before
 * the coordinator starts, so a bad combination exits before anything is served.
 */
function dashboardTokenOf(config: CoordinatorConfig): string {
  const grpc = config.grpc;
  if (grpc?.tls) {
    throw new CliError(
      '--dashboard-port: the embedded dashboard speaks plaintext gRPC to its own coordinator; with grpc.tls run `troupe dashboard --tls-ca …` instead',
      ExitCode.USAGE,
    );
  }
  const token =
    grpc?.token ?? (grpc?.tokenFile ? readFileSync(grpc.tokenFile, 'utf8').trim() : undefined);
  if (!token) {
    throw new CliError(
      '--dashboard-port: the job API needs a token (grpc.token or grpc.tokenFile)',
      ExitCode.USAGE,
    );
  }
  return token;
}
