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
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { parse as parseYaml } from 'yaml';
import { Coordinator } from './coordinator';
import { applyEnvironment, ConfigSchema } from './config';

function fail(lines: string[]): never {
  for (const l of lines) process.stderr.write(`troupe-coordinator: ${l}\n`);
  process.exit(2);
}

function loadRaw(): Record<string, unknown> {
  const args = process.argv.slice(2);
  let raw: Record<string, unknown> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--config') {
      const file = args[++i];
      if (!file) fail(['--config needs a file']);
      try {
        raw = (parseYaml(readFileSync(file, 'utf8')) as Record<string, unknown> | null) ?? {};
      } catch (err) {
        fail([`cannot read ${file}: ${(err as Error).message}`]);
      }
    } else if (a === '--help' || a === '-h') {
      process.stdout.write('usage: troupe-coordinator [--config file.yaml]\n');
      process.exit(0);
    } else {
      fail([`unknown argument '${a}' (usage: troupe-coordinator [--config file.yaml])`]);
    }
  }
  return raw;
}

async function main(): Promise<void> {
  const { config: raw, issues } = applyEnvironment(loadRaw(), process.env);
  const parsed = ConfigSchema.safeParse(raw);
  const problems = [...issues];
  if (!parsed.success) {
    for (const i of parsed.error.issues) {
      problems.push(`${['config', ...i.path.map(String)].join('.')}: ${i.message}`);
    }
  }
  if (problems.length > 0 || !parsed.success) fail(problems);
  const config = parsed.data;
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
