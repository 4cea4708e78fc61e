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

/**
 * Pause between two attempts to reconnect to one server (nats.js waits 2 s): a process cut off
 * from NATS (a partition, a server restarted) is back within about half a second of the server
 * answering again, not up to two (chaos run 9: a partitioned node agent reconnected 2 s after the
 * heal). With three servers and nats.js's jitter that is a few connection attempts a second per
 * process while every server is away.
 */
export const NATS_RECONNECT_WAIT_MS = 500;

/**
 * How every long-running Troupe process reconnects: for ever (nats.js gives up after 10
 * attempts, 20 s), {@link NATS_RECONNECT_WAIT_MS} apart.
 */
export const NATS_RECONNECT_OPTIONS = {
  maxReconnectAttempts: -1,
  reconnectTimeWait: NATS_RECONNECT_WAIT_MS,
} as const satisfies Pick<ConnectionOptions, 'maxReconnectAttempts' | 'reconnectTimeWait'>;

/**
 * The nats.js connect options for a `nats` config section of a long-running process: servers,
 * credentials and {@link NATS_RECONNECT_OPTIONS}.
 */
export function natsConnectionOptions(
  config: NatsConnectionConfig,
): Pick<
  ConnectionOptions,
  'servers' | 'token' | 'user' | 'pass' | 'maxReconnectAttempts' | 'reconnectTimeWait'
> {
  return {
    servers: config.servers,
    ...NATS_RECONNECT_OPTIONS,
    ...(config.token ? { token: config.token } : {}),
    ...(config.user ? { user: config.user, pass: config.pass } : {}),
  };
}
