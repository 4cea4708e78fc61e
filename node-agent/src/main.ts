#!/usr/bin/env node
/**
 * troupe-node-agent: the only place that reads argv and the environment.
 *   troupe-node-agent [--config node-agent.yaml]
 * Environment (overrides the file): TROUPE_CLUSTER, TROUPE_NATS_URL (comma-separated),
 * TROUPE_NATS_USER, TROUPE_NATS_PASS, TROUPE_NATS_TOKEN, TROUPE_HOST_ID,
 * TROUPE_NODE_LABELS (k=v,k=v), TROUPE_SLOTS (sandbox=N,evaluator=M), TROUPE_BACKEND
 * (auto|docker|process), TROUPE_ALLOW_PROCESS_BACKEND (1|0), TROUPE_DOCKER_SOCKET,
 * TROUPE_STANDALONE (1|0), TROUPE_LOG_LEVEL.
 * Exit status: 0 after a clean stop, 2 for a bad config (every issue printed, nothing opened),
 * 1 when starting or stopping fails.
 */
import { loadServerConfig, parseServerArgs, serverConfigProblems } from '@troupe/proto';
import { pino } from 'pino';
import { applyEnvironment, ConfigSchema, type NodeAgentConfig } from './config';
import { NodeAgent } from './node-agent';

const USAGE = 'usage: troupe-node-agent [--config file.yaml]';

/** The config from `--config` and the environment; exits 2 printing every problem. */
function loadConfig(): NodeAgentConfig {
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
      process.stderr.write(`troupe-node-agent: ${line}\n`);
    }
    process.exit(2);
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = pino({ level: config.logLevel, base: { app: 'troupe-node-agent' } });
  const agent = await NodeAgent.start(config, { logger });
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    agent.stop().then(
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
  process.stderr.write(`troupe-node-agent: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
