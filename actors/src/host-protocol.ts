import { z } from 'zod';

/**
 * What a host tells the coordinator about itself when it registers (`coord.nodes.register`).
 * Slots are per kind; a kind missing from `slots` is unlimited on that host.
 */
export const HostInfoSchema = z.object({
  hostId: z.string().min(1),
  /** Random per process start: a restarted host is a new incarnation. */
  incarnation: z.string().min(1),
  kinds: z.array(z.string()),
  slots: z.record(z.string(), z.number().int().nonnegative()),
  cpu: z.number().nonnegative(),
  memMb: z.number().nonnegative(),
  backends: z.array(z.enum(['docker', 'process', 'kvm', 'desktop', 'vm'])),
  labels: z.record(z.string(), z.string()),
});
/** A decoded host registration. */
export type HostInfo = z.infer<typeof HostInfoSchema>;

/** Reply to a registration: the heartbeat contract the host must keep. */
export const RegisterReplySchema = z.object({
  heartbeatMs: z.number().int().positive(),
  deadAfterMs: z.number().int().positive(),
  /**
   * Set when the registering incarnation was declared dead (the reason): it is not revived —
   * its actors have been moved — so the host fences every activation and registers again as a
   * new incarnation. A host cut off from the coordinator (a partition) only learns this way.
   */
  fenced: z.string().optional(),
});
/** A decoded registration reply. */
export type RegisterReply = z.infer<typeof RegisterReplySchema>;

/**
 * How long a host waits for the coordinator to answer its registration. A new leader adds it to
 * the grace period of the hosts it loads: a host whose request went to the old leader (or to
 * this process before it subscribed) may stay silent that long before it asks again.
 */
export const REGISTER_TIMEOUT_MS = 2_000;

/** Periodic heartbeat (`coord.nodes.heartbeat`), with the live activations per kind. */
export const HeartbeatSchema = z.object({
  hostId: z.string().min(1),
  incarnation: z.string().min(1),
  load: z.record(z.string(), z.number().int().nonnegative()),
  draining: z.boolean().optional(),
});
/** A decoded heartbeat. */
export type Heartbeat = z.infer<typeof HeartbeatSchema>;

/**
 * Reply to a heartbeat. `fenced`: the coordinator declared this incarnation dead and moved its
 * actors; the host must drop every activation and register again as a new incarnation.
 * `unknown`: the coordinator has no registration (e.g. a new leader without it): register again.
 */
export const HeartbeatReplySchema = z.object({
  status: z.enum(['ok', 'fenced', 'unknown']),
  reason: z.string().optional(),
});
/** A decoded heartbeat reply. */
export type HeartbeatReply = z.infer<typeof HeartbeatReplySchema>;

/** `coord.nodes.deregister`: a host leaving cleanly. */
export const DeregisterSchema = z.object({
  hostId: z.string().min(1),
  incarnation: z.string().min(1),
});
