import { applyEnvironment, ConfigSchema, NodeAgent } from '@troupe/node-agent';
import { pino } from 'pino';
import { type CommandContext } from '../command-context';
import { ExitCode } from '../exit-codes';
import { ReadyFile } from '../ready-file';
import { loadServerConfig } from '../server-config';
import { untilAborted } from './until-aborted';

/** Options of `troupe node-agent`. */
export interface NodeAgentCommandOptions {
  /** YAML config file (the node agent's `ConfigSchema`). */
  config?: string;
  /** A file written once registered and removed on stop (for health checks). */
  readyFile?: string;
}

/**
 * `troupe node-agent`: a node agent hosting sandbox and evaluator actors. Config from `--config`
 * and the environment (see the node agent's `applyEnvironment`); logs pino JSON on stdout;
 * SIGTERM/SIGINT stop taking work, let running calls finish for `shutdownGraceMs`, destroy
 * every sandbox this host created, then close.
 */
export async function nodeAgentCommand(
  ctx: CommandContext,
  opts: NodeAgentCommandOptions,
): Promise<number> {
  const config = loadServerConfig({
    ...(opts.config ? { file: opts.config } : {}),
    env: ctx.io.env,
    schema: ConfigSchema,
    applyEnvironment,
  });
  const logger = pino(
    { level: config.logLevel, base: { app: 'troupe-node-agent' } },
    pino.destination({ fd: 1, sync: true }),
  );
  const ready = new ReadyFile(opts.readyFile);
  const agent = await NodeAgent.start(config, { logger });
  logger.info({ cluster: config.cluster, hostId: agent.hostId }, 'node agent serving');
  ready.mark(JSON.stringify({ pid: process.pid, hostId: agent.hostId }));
  await untilAborted(ctx.signal);
  ready.clear();
  await agent.stop();
  return ExitCode.OK;
}
