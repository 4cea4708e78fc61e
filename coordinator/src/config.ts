import {
  checkNatsAuth,
  ClusterNameSchema,
  COMMON_ENVIRONMENT_VARIABLES,
  EnvironmentOverrides,
  NatsConnectionSchema,
} from '@troupe/proto';
import { z } from 'zod';
import { GrpcConfigSchema } from './jobs/grpc-config';

/** Coordinator configuration: parsed once in `main.ts`; every field has a default. */
export const ConfigSchema = z
  .object({
    /** Cluster name, `[a-z0-9-]{1,32}`. */
    cluster: ClusterNameSchema,
    /** NATS connection. @default { servers: 'nats://127.0.0.1:4222' } */
    nats: NatsConnectionSchema,
    /** This coordinator's id (lease holder and host id). @default coord-<random> */
    coordinatorId: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must match [A-Za-z0-9_-]{1,64}')
      .optional(),
    heartbeatMs: z.number().int().min(100).default(2_000),
    missedHeartbeats: z.number().int().min(1).default(3),
    leaseMs: z.number().int().min(500).default(5_000),
    renewMs: z.number().int().min(100).default(1_000),
    activationTimeoutMs: z.number().int().min(100).default(15_000),
    sweepIntervalMs: z.number().int().min(100).default(5_000),
    /**
     * How long after a job finished its task actors and sandboxes (actors defined with
     * `retireWithJob`) are deleted: directory entry, state and inbox. The job's results (job
     * record, task results, events, artifacts) are kept. `null` keeps them for good.
     */
    actorRetentionMs: z.number().int().min(0).nullable().default(600_000),
    /**
     * How long a finished job (its record, task records and results, events, artifacts, job
     * actor) is kept before the leader deletes it, as `DeleteJob` does. `null` (the default)
     * keeps finished jobs until they are deleted by hand.
     */
    jobRetentionMs: z.number().int().min(0).nullable().default(null),
    /** Max live activations per kind across the cluster. */
    kindLimits: z.record(z.string(), z.number().int().positive()).default({}),
    metrics: z
      .object({
        /** 0 picks a free port; null disables the endpoint. */
        port: z.number().int().min(0).max(65_535).nullable().default(9464),
        host: z.string().default('127.0.0.1'),
      })
      .strict()
      .default({ port: 9464, host: '127.0.0.1' }),
    shutdownGraceMs: z.number().int().min(0).default(10_000),
    /**
     * Replicas of the streams, buckets and object store the cluster creates (inboxes, directory,
     * state, nodes, jobs, events, artifacts, trajectories, search journals). 3 on a 3-node
     * JetStream cluster, so that losing one server loses nothing; must not exceed the number of
     * JetStream servers. Applies when a stream is created: an existing one is used as it is.
     */
    replicas: z.number().int().min(1).max(5).default(1),
    /**
     * How far the process's heap may grow past its live set before V8's next full collection,
     * in percent (100: to twice the live set); 0 leaves V8's own factor (up to 4×, picked from
     * the allocation rate). Process-wide: it is set when the coordinator starts. See
     * `docs/coordinator.md`, Configuration.
     */
    heapGrowthPercent: z.number().int().min(0).max(300).default(100),
    /** The gRPC job API (JobService, NodeService); not served when absent. */
    grpc: GrpcConfigSchema.optional(),
    logLevel: z
      .enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'])
      .default('info'),
  })
  .strict()
  .superRefine((c, ctx) => {
    checkNatsAuth(c.nats, ctx);
    if (c.renewMs * 2 > c.leaseMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['renewMs'],
        message: 'must be at most half of leaseMs',
      });
    }
  });

/** What a caller passes (before defaults). */
export type CoordinatorOptions = z.input<typeof ConfigSchema>;
/** Validated configuration with defaults. */
export type CoordinatorConfig = z.output<typeof ConfigSchema>;

/** The environment variables the coordinator reads (see {@link applyEnvironment}). */
export const ENVIRONMENT_VARIABLES = [
  ...COMMON_ENVIRONMENT_VARIABLES,
  'TROUPE_COORDINATOR_ID',
  'TROUPE_METRICS_PORT',
  'TROUPE_METRICS_HOST',
  'TROUPE_GRPC_HOST',
  'TROUPE_GRPC_PORT',
  'TROUPE_GRPC_TOKEN',
  'TROUPE_GRPC_TOKEN_FILE',
  'TROUPE_SHUTDOWN_GRACE_MS',
  'TROUPE_ACTOR_RETENTION_MS',
  'TROUPE_JOB_RETENTION_MS',
] as const;

/**
 * Applies environment overrides to a raw (unvalidated) coordinator config. Values are put where
 * the schema will check them; only their syntax is checked here, and every problem is returned
 * (named by the variable), not thrown, so that all of them can be printed at once.
 *
 * `TROUPE_NATS_URL` is comma-separated; `TROUPE_METRICS_PORT` is a port or `off`;
 * `TROUPE_ACTOR_RETENTION_MS` and `TROUPE_JOB_RETENTION_MS` are milliseconds or `never`; any
 * `TROUPE_GRPC_*` variable turns the job API on (its `grpc` section then needs a token).
 */
export function applyEnvironment(
  raw: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>>,
): { config: Record<string, unknown>; issues: string[] } {
  const o = new EnvironmentOverrides(raw, env).applyCommon();
  o.set('TROUPE_COORDINATOR_ID', (v) => (o.config['coordinatorId'] = v));
  o.set('TROUPE_METRICS_PORT', (v) => {
    if (v.trim() === 'off') o.section('metrics')['port'] = null;
    else {
      const port = o.int('TROUPE_METRICS_PORT', v);
      if (port !== undefined) o.section('metrics')['port'] = port;
    }
  });
  o.set('TROUPE_METRICS_HOST', (v) => (o.section('metrics')['host'] = v));
  o.set('TROUPE_GRPC_HOST', (v) => (o.section('grpc')['host'] = v));
  o.set('TROUPE_GRPC_PORT', (v) => {
    const port = o.int('TROUPE_GRPC_PORT', v);
    if (port !== undefined) o.section('grpc')['port'] = port;
  });
  o.set('TROUPE_GRPC_TOKEN', (v) => (o.section('grpc')['token'] = v.trim()));
  o.set('TROUPE_GRPC_TOKEN_FILE', (v) => (o.section('grpc')['tokenFile'] = v));
  o.set('TROUPE_SHUTDOWN_GRACE_MS', (v) => {
    const ms = o.int('TROUPE_SHUTDOWN_GRACE_MS', v);
    if (ms !== undefined) o.config['shutdownGraceMs'] = ms;
  });
  for (const [name, key] of [
    ['TROUPE_ACTOR_RETENTION_MS', 'actorRetentionMs'],
    ['TROUPE_JOB_RETENTION_MS', 'jobRetentionMs'],
  ] as const) {
    o.set(name, (v) => {
      if (v.trim() === 'never') o.config[key] = null;
      else {
        const ms = o.int(name, v);
        if (ms !== undefined) o.config[key] = ms;
      }
    });
  }
  return o.result();
}
