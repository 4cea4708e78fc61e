import { applyEnvironment, ConfigSchema, NodeAgent } from '@troupe/node-agent';
import { type CommandContext } from '../command-context';
import { runServerCommand } from '../run-server-command';

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
  return runServerCommand(ctx, {
    app: 'troupe-node-agent',
    ...(opts.config ? { configFile: opts.config } : {}),
    schema: ConfigSchema,
    applyEnvironment,
    ...(opts.readyFile ? { readyFile: opts.readyFile } : {}),
    start: async (config, logger) => {
      const agent = await NodeAgent.start(config, { logger });
      logger.info({ cluster: config.cluster, hostId: agent.hostId }, 'node agent serving');
      return agent;
    },
    ready: (agent) => JSON.stringify({ pid: process.pid, hostId: agent.hostId }),
  });
}
