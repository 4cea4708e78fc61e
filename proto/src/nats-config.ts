import { type ConnectionOptions } from '@nats-io/transport-node';
import { z } from 'zod';
import { NamePattern } from './names';

/** The NATS server a process connects to when its config names none. */
export const DEFAULT_NATS_SERVER = 'nats://127.0.0.1:4222';

/**
 * The `cluster` field of a server config: the cluster name, `[a-z0-9-]{1,32}`.
 * @default 'default'
 */
export const ClusterNameSchema = z
  .string()
  .regex(NamePattern.CLUSTER, 'must match [a-z0-9-]{1,32}')
  .default('default');

/**
 * The `nats` section of a server config (coordinator, node agent): server URL(s) and either a
 * token or user and pass (a cross-field rule: the config's own `superRefine` calls
 * {@link checkNatsAuth}, so its issues come in the config's order). @default `{ servers:
 * 'nats://127.0.0.1:4222' }`
 */
export const NatsConnectionSchema = z
  .object({
    /** One URL or a non-empty list. */
    servers: z
      .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
      .default(DEFAULT_NATS_SERVER),
    user: z.string().min(1).optional(),
    pass: z.string().min(1).optional(),
    token: z.string().min(1).optional(),
  })
  .strict()
  .prefault({});

/** A parsed `nats` config section. */
export type NatsConnectionConfig = z.output<typeof NatsConnectionSchema>;

/**
 * Adds the issues of a `nats` section's credentials to `ctx` (at `nats.token`, `nats.user`):
 * either a token or user and pass, and user and pass together.
 */
export function checkNatsAuth(nats: NatsConnectionConfig, ctx: z.RefinementCtx): void {
  if (nats.token && (nats.user || nats.pass)) {
    ctx.addIssue({
      code: 'custom',
      path: ['nats', 'token'],
      message: 'give either token or user/pass, not both',
    });
  }
  if (Boolean(nats.user) !== Boolean(nats.pass)) {
    ctx.addIssue({ code: 'custom', path: ['nats', 'user'], message: 'user and pass go together' });
  }
}

/** The nats.js connect options for a `nats` config section (servers and credentials). */
export function natsConnectionOptions(
  config: NatsConnectionConfig,
): Pick<ConnectionOptions, 'servers' | 'token' | 'user' | 'pass'> {
  return {
    servers: config.servers,
    ...(config.token ? { token: config.token } : {}),
    ...(config.user ? { user: config.user, pass: config.pass } : {}),
  };
}
