#!/usr/bin/env node
/**
 * troupe-coordinator: the only place that reads argv and the environment.
 *   troupe-coordinator [--config coordinator.yaml]
 * Environment (overrides the file; see `applyEnvironment` in config.ts): TROUPE_CLUSTER,
 * TROUPE_NATS_URL, TROUPE_NATS_USER, TROUPE_NATS_PASS, TROUPE_NATS_TOKEN, TROUPE_COORDINATOR_ID,
 * TROUPE_METRICS_PORT, TROUPE_METRICS_HOST, TROUPE_GRPC_HOST, TROUPE_GRPC_PORT, TROUPE_GRPC_TOKEN,
 * TROUPE_GRPC_TOKEN_FILE, TROUPE_SHUTDOWN_GRACE_MS, TROUPE_LOG_LEVEL.
 * This binary registers no job drivers; `troupe coordinator` (client CLI) is the deployable
 * entry with the built-in drivers.
 */
import { loadServerConfig, parseServerArgs, serverConfigProblems } from '@troupe/proto';
import { pino } from 'pino';
import { Coordinator } from './coordinator';
import { applyEnvironment, ConfigSchema, type CoordinatorConfig } from './config';

const USAGE = 'usage: troupe-coordinator [--config file.yaml]';

/** The config from `--config` and the environment; exits 2 printing every problem. */
function loadConfig(): CoordinatorConfig {
  try {
    const args = parseServerArgs(process.argv.slice(2), USAGE);
    if (args.help) {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    }
    return loadServerConfig({
      ...(args.file !== undefined ? { file: args.file } : {}),
      env: process.env,
      schema: ConfigSchema,
      applyEnvironment,
    });
  } catch (err) {
    for (const line of serverConfigProblems(err) ?? [(err as Error).message]) {
      process.stderr.write(`troupe-coordinator: ${line}\n`);
    }
    process.exit(2);
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = pino({ level: config.logLevel, base: { app: 'troupe-coordinator' } });
  const coordinator = await Coordinator.start(config, { logger });
  logger.info(
    { cluster: config.cluster, metricsPort: coordinator.metricsPort },
    'coordinator started',
  );
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    coordinator.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err: unknown) => {
  process.stderr.write(`troupe-coordinator: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
