import * as path from 'node:path';
import { AgentHostConfigSchema, applyAgentHostEnvironment } from '../agent-host-config';
import { type CommandContext } from '../command-context';
import { ModelHosting } from '../model-hosting';
import { runServerCommand } from '../run-server-command';

/** Options of `troupe agent-host`. */
export interface AgentHostCommandOptions {
  /** YAML config file ({@link AgentHostConfigSchema}). */
  config?: string;
  /** A file written once the host is registered and removed on stop (for health checks). */
  readyFile?: string;
  /** `--models`: the models file (beats `TROUPE_MODELS_FILE` and the config file). */
  models?: string;
  /** `--skills`: skill folders pushed to the cluster's skill store at start. */
  skills?: string;
}

/**
 * `troupe agent-host`: a process that hosts agent actors (the `agent` kind) for a cluster, with
 * the models of a models file and the API keys the models name in its environment: the agent
 * host of `troupe coordinator --models` on its own, so agent sessions can run on more machines
 * than the coordinator's, and model keys can be kept off the coordinator's machine when its jobs
 * need no LLM operators. It needs a running coordinator (which places agents on it) and the
 * cluster's NATS; it opens no port. SIGTERM/SIGINT give running turns `shutdownGraceMs`.
 */
export async function agentHostCommand(
  ctx: CommandContext,
  opts: AgentHostCommandOptions,
): Promise<number> {
  const flags: Record<string, string> = {};
  if (opts.models) flags['modelsFile'] = path.resolve(ctx.io.cwd, opts.models);
  if (opts.skills) flags['skillsDir'] = path.resolve(ctx.io.cwd, opts.skills);
  return runServerCommand(ctx, {
    app: 'troupe-agent-host',
    ...(opts.config ? { configFile: opts.config } : {}),
    schema: AgentHostConfigSchema,
    // The flags beat the environment, which beats the config file.
    applyEnvironment: (raw, env) => {
      const r = applyAgentHostEnvironment(raw, env);
      const config = { ...r.config, ...flags };
      for (const key of ['modelsFile', 'skillsDir'] as const) {
        const v = config[key];
        if (typeof v === 'string' && v !== '') config[key] = path.resolve(ctx.io.cwd, v);
      }
      return { config, issues: r.issues };
    },
    ...(opts.readyFile ? { readyFile: opts.readyFile } : {}),
    start: async (config, logger) => {
      // A bad models file fails here, before any connection is opened.
      const hosting = ModelHosting.load({
        modelsFile: config.modelsFile,
        ...(config.skillsDir ? { skillsDir: config.skillsDir } : {}),
        cluster: config.cluster,
        nats: config.nats,
        hostId: config.hostId,
        replicas: config.replicas,
        env: ctx.io.env,
        logger: logger.child({ component: 'agents' }),
      });
      await hosting.startAgentHost();
      logger.info(
        { cluster: config.cluster, hostId: config.hostId, models: hosting.registry.names() },
        'agent host serving',
      );
      return {
        hostId: config.hostId,
        stop: async () => {
          logger.info({ graceMs: config.shutdownGraceMs }, 'agent host stopping');
          await hosting.stop(config.shutdownGraceMs);
          logger.info({}, 'agent host stopped');
        },
      };
    },
    ready: (server) => JSON.stringify({ pid: process.pid, hostId: server.hostId }),
  });
}
