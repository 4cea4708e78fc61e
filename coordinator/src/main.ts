#!/usr/bin/env node
/**
 * troupe-coordinator: the only place that reads argv and the environment.
 *   troupe-coordinator [--config coordinator.yaml]
 * Environment (overrides the file): TROUPE_CLUSTER, TROUPE_NATS_URL, TROUPE_NATS_USER,
 * TROUPE_NATS_PASS, TROUPE_NATS_TOKEN, TROUPE_COORDINATOR_ID, TROUPE_METRICS_PORT,
 * TROUPE_METRICS_HOST, TROUPE_LOG_LEVEL.
 */
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { parse as parseYaml } from 'yaml';
import { Coordinator } from './coordinator';
import { ConfigSchema } from './config';

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
  const env = process.env;
  const nats = { ...(raw['nats'] as Record<string, unknown> | undefined) };
  if (env['TROUPE_NATS_URL']) nats['servers'] = env['TROUPE_NATS_URL'].split(',');
  if (env['TROUPE_NATS_USER']) nats['user'] = env['TROUPE_NATS_USER'];
  if (env['TROUPE_NATS_PASS']) nats['pass'] = env['TROUPE_NATS_PASS'];
  if (env['TROUPE_NATS_TOKEN']) nats['token'] = env['TROUPE_NATS_TOKEN'];
  const metrics = { ...(raw['metrics'] as Record<string, unknown> | undefined) };
  if (env['TROUPE_METRICS_PORT']) {
    metrics['port'] =
      env['TROUPE_METRICS_PORT'] === 'off' ? null : Number(env['TROUPE_METRICS_PORT']);
  }
  if (env['TROUPE_METRICS_HOST']) metrics['host'] = env['TROUPE_METRICS_HOST'];
  return {
    ...raw,
    ...(Object.keys(nats).length ? { nats } : {}),
    ...(Object.keys(metrics).length ? { metrics } : {}),
    ...(env['TROUPE_CLUSTER'] ? { cluster: env['TROUPE_CLUSTER'] } : {}),
    ...(env['TROUPE_COORDINATOR_ID'] ? { coordinatorId: env['TROUPE_COORDINATOR_ID'] } : {}),
    ...(env['TROUPE_LOG_LEVEL'] ? { logLevel: env['TROUPE_LOG_LEVEL'] } : {}),
  };
}

async function main(): Promise<void> {
  const parsed = ConfigSchema.safeParse(loadRaw());
  if (!parsed.success) {
    fail(parsed.error.issues.map((i) => `config.${i.path.join('.')}: ${i.message}`));
  }
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
