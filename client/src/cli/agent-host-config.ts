import { defaultHostId } from '@troupe/node-agent';
import {
  checkNatsAuth,
  ClusterNameSchema,
  COMMON_ENVIRONMENT_VARIABLES,
  EnvironmentOverrides,
  NamePattern,
  NatsConnectionSchema,
} from '@troupe/proto';
import { z } from 'zod';

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/**
 * Configuration of `troupe agent-host` (a process that hosts agent actors for a cluster, with the
 * models of a models file): `--config` YAML, then the environment ({@link applyAgentHostEnvironment}),
 * then the command's flags. Parsed once; everything but `modelsFile` has a default.
 */
export const AgentHostConfigSchema = z
  .object({
    /** Cluster name. @default 'default' */
    cluster: ClusterNameSchema,
    /**
     * This host's id, unique in the cluster. An agent host keeps no local state (sessions live in
     * JetStream), so a new id after a restart is fine.
     * @default `agents-<hostname>`, cleaned to `[A-Za-z0-9_-]{1,64}`
     */
    hostId: z
      .string()
      .regex(NamePattern.HOST_ID, 'must match [A-Za-z0-9_-]{1,64}')
      .default(() => `agents-${defaultHostId()}`.slice(0, 64)),
    /** NATS connection. @default { servers: 'nats://127.0.0.1:4222' } */
    nats: NatsConnectionSchema,
    /**
     * The models file (the `ModelRegistry` YAML or JSON); each model names the environment
     * variable that holds its API key (`apiKeyEnv`).
     */
    modelsFile: z.string({ error: 'give --models or TROUPE_MODELS_FILE' }).min(1),
    /** Skill folders (`<dir>/<name>/SKILL.md`) pushed to the cluster's skill store at start. */
    skillsDir: z.string().min(1).optional(),
    /** Replicas of the streams and buckets this host creates (as the coordinator's). @default 1 */
    replicas: z.int().min(1).max(5).default(1),
    /** On SIGTERM, running agent turns get this long before they are aborted. @default 30000 */
    shutdownGraceMs: z.int().min(0).default(30_000),
    /** @default 'info' */
    logLevel: z.enum(LOG_LEVELS).default('info'),
  })
  .strict()
  .superRefine((c, ctx) => checkNatsAuth(c.nats, ctx));

/** A validated agent host config. */
export type AgentHostConfig = z.output<typeof AgentHostConfigSchema>;

/** The environment variables `troupe agent-host` reads (see {@link applyAgentHostEnvironment}). */
export const AGENT_HOST_ENVIRONMENT_VARIABLES = [
  ...COMMON_ENVIRONMENT_VARIABLES,
  'TROUPE_HOST_ID',
  'TROUPE_MODELS_FILE',
  'TROUPE_SKILLS_DIR',
  'TROUPE_SHUTDOWN_GRACE_MS',
] as const;

/**
 * Applies the environment to a raw agent host config: the common server variables (cluster,
 * NATS, log level, replicas) and `TROUPE_HOST_ID`, `TROUPE_MODELS_FILE`, `TROUPE_SKILLS_DIR`,
 * `TROUPE_SHUTDOWN_GRACE_MS`. Every syntax problem is returned, named by its variable. Model API
 * keys are not config: the LLM client reads the variables the models file names.
 */
export function applyAgentHostEnvironment(
  raw: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>>,
): { config: Record<string, unknown>; issues: string[] } {
  const o = new EnvironmentOverrides(raw, env).applyCommon();
  o.set('TROUPE_HOST_ID', (v) => (o.config['hostId'] = v));
  o.set('TROUPE_MODELS_FILE', (v) => (o.config['modelsFile'] = v));
  o.set('TROUPE_SKILLS_DIR', (v) => (o.config['skillsDir'] = v));
  o.set('TROUPE_SHUTDOWN_GRACE_MS', (v) => {
    const n = o.int('TROUPE_SHUTDOWN_GRACE_MS', v);
    if (n !== undefined) o.config['shutdownGraceMs'] = n;
  });
  return o.result();
}
