#!/usr/bin/env node
/**
 * troupe-node-agent: the only place that reads argv and the environment.
 *   troupe-node-agent [--config node-agent.yaml]
 * Environment (overrides the file): TROUPE_CLUSTER, TROUPE_NATS_URL (comma-separated),
 * TROUPE_NATS_USER, TROUPE_NATS_PASS, TROUPE_NATS_TOKEN, TROUPE_HOST_ID,
 * TROUPE_NODE_LABELS (k=v,k=v), TROUPE_SLOTS (sandbox=N,evaluator=M), TROUPE_BACKEND
 * (auto|docker|process), TROUPE_ALLOW_PROCESS_BACKEND (1|0), TROUPE_DOCKER_SOCKET,
 * TROUPE_STANDALONE (1|0), TROUPE_VM (auto|on|off), TROUPE_VM_STATE_DIR, TROUPE_VM_IMAGE_DIR,
 * TROUPE_VM_WARM, TROUPE_LOG_LEVEL.
 * Exit status: 0 after a clean stop, 2 for a bad config (every issue printed, nothing opened),
 * 1 when starting or stopping fails.
 */
import { serverMain } from '@troupe/proto';
import { pino } from 'pino';
import { applyEnvironment, ConfigSchema } from './config';
import { NodeAgent } from './node-agent';

serverMain({
  name: 'troupe-node-agent',
  process,
  schema: ConfigSchema,
  applyEnvironment,
  logger: (config) => pino({ level: config.logLevel, base: { app: 'troupe-node-agent' } }),
  start: (config, logger) => NodeAgent.start(config, { logger }),
});
