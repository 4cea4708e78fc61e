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
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { parse as parseYaml } from 'yaml';
import { applyEnvironment, ConfigSchema } from './config';
import { NodeAgent } from './node-agent';

const USAGE = 'usage: troupe-node-agent [--config file.yaml]';

function fail(lines: string[]): never {
  for (const l of lines) process.stderr.write(`troupe-node-agent: ${l}\n`);
  process.exit(2);
}

function readFile(): Record<string, unknown> {
  const args = process.argv.slice(2);
  let raw: Record<string, unknown> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--config') {
      const file = args[++i];
      if (!file) fail([`--config needs a file (${USAGE})`]);
      let parsed: unknown;
      try {
        parsed = parseYaml(readFileSync(file, 'utf8'));
      } catch (err) {
        fail([`cannot read ${file}: ${(err as Error).message}`]);
      }
      if (
        parsed !== null &&
        parsed !== undefined &&
        (typeof parsed !== 'object' || Array.isArray(parsed))
      ) {
        fail([`${file}: must be a YAML mapping`]);
      }
      raw = (parsed as Record<string, unknown> | null) ?? {};
    } else if (a === '--help' || a === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else {
      fail([`unknown argument '${a}' (${USAGE})`]);
    }
  }
  return raw;
}

async function main(): Promise<void> {
  const { config: raw, issues } = applyEnvironment(readFile(), process.env);
  const parsed = ConfigSchema.safeParse(raw);
  const problems = [...issues];
  if (!parsed.success) {
    for (const i of parsed.error.issues) {
      problems.push(`${['config', ...i.path.map(String)].join('.')}: ${i.message}`);
    }
  }
  if (problems.length > 0 || !parsed.success) fail(problems);
  const config = parsed.data;
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
