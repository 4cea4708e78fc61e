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
import { serverMain } from '@troupe/proto';
import { pino } from 'pino';
import { applyEnvironment, ConfigSchema } from './config';
import { Coordinator } from './coordinator';

serverMain({
  name: 'troupe-coordinator',
  process,
  schema: ConfigSchema,
  applyEnvironment,
  logger: (config) => pino({ level: config.logLevel, base: { app: 'troupe-coordinator' } }),
  start: async (config, logger) => {
    const coordinator = await Coordinator.start(config, { logger });
    logger.info(
      { cluster: config.cluster, metricsPort: coordinator.metricsPort },
      'coordinator started',
    );
    return coordinator;
  },
});
