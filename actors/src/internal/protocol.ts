import { TroupeError } from '@troupe/proto';
import { z } from 'zod';

/** An actor address as it travels inside protocol messages (validated again by the builders). */
export const AddressSchema = z.object({ kind: z.string(), id: z.string() });

/** An ask's core envelope ({@link CoreEnvelope}) as it travels inside an activation request. */
export const AskEnvelopeSchema = z.object({
  t: z.string().min(1),
  m: z.unknown(),
  d: z.number().optional(),
  s: z.string().optional(),
  i: z.literal(1).optional(),
  k: z.number().optional(),
  n: z.string().max(64).optional(),
});

/** An ask handed to a host with its activation: the envelope plus the asker's reply subject. */
export const ForwardedAskSchema = AskEnvelopeSchema.extend({ r: z.string().min(1) });
/** A decoded forwarded ask. */
export type ForwardedAsk = z.infer<typeof ForwardedAskSchema>;

/**
 * Header on a reply that is the *answer to the ask* an activation request carried (sent by the
 * host that ran it), as opposed to the placer's `{hostId, epoch}` reply (then the asker retries).
 */
export const ANSWER_HEADER = 'Troupe-Answer';

/**
 * A placer's refusal of an activation request it has done nothing for: it stopped (its
 * coordinator stepped down) before placing the actor, so no host took the request's ask. The
 * requester asks the placement service again, reaching the next leader's placer, instead of
 * failing the ask (chaos seed 9420: a task's `create` failed when the placer holding it
 * stepped down, and its attempt was retried only after the ask's 4 s silence).
 */
export function placerStoppedError(what: string): TroupeError {
  return new TroupeError('UNAVAILABLE', `${what}: the placer stopped`, {
    details: { placerStopped: true },
  });
}

/** Whether `err` is a {@link placerStoppedError}. */
export function isPlacerStopped(err: unknown): boolean {
  return err instanceof TroupeError && err.details?.['placerStopped'] === true;
}

/** `coord.sched.activate` request: the address plus scheduling hints. */
export const ActivateRequestSchema = z.object({
  addr: AddressSchema,
  /**
   * The ask that found no responder: a placer that starts the activation on a remote host hands
   * it over, and that host answers the request's reply subject itself (with {@link ANSWER_HEADER}).
   */
  ask: AskEnvelopeSchema.optional(),
  jobId: z.string().min(1).max(128).optional(),
  labels: z.record(z.string(), z.string()).optional(),
  near: AddressSchema.optional(),
});
/** A decoded activate request. */
export type ActivateRequest = z.infer<typeof ActivateRequestSchema>;
/** `coord.sched.activate` reply: where the actor is live. */
export const ActivateReplySchema = z.object({ hostId: z.string(), epoch: z.number().int() });
/** A decoded activate reply. */
export type ActivateReply = z.infer<typeof ActivateReplySchema>;

/** `host.<id>.activate` request from a placer. */
export const HostActivateRequestSchema = z.object({
  addr: AddressSchema,
  epoch: z.number().int().positive(),
  /** Directory revision the placer wrote ACTIVATING at: saves the host a read (two-step form). */
  revision: z.number().int().positive().optional(),
  /**
   * Directory revision at which the placer read the entry SLEEPING (0: no entry yet). The host
   * then claims the entry itself, SLEEPING → IDLE at `epoch`, in one compare-and-set; if another
   * writer got there first it refuses with `details.raced` and the placer looks again.
   */
  claimRevision: z.number().int().nonnegative().optional(),
  /** An ask to run as soon as the activation is live; the host answers `ask.r` itself. */
  ask: ForwardedAskSchema.optional(),
  /** Inbox sequence of the post that woke the actor (see {@link ActivationPlacement}). */
  pendingSeq: z.number().int().positive().optional(),
  /** Job recorded in the directory entry. */
  jobId: z.string().optional(),
});
/** How a placer handed an activation to a host (the fields of a host activate request). */
export interface ActivationPlacement {
  /** Two-step form: the placer wrote ACTIVATING at this revision; the host marks it IDLE. */
  directoryRevision?: number;
  /** One-step form: the host claims the SLEEPING entry at this revision (0: absent) itself. */
  claimRevision?: number;
  /** Job recorded in the directory entry. */
  jobId?: string;
  /** The request carries an ask (the host then skips the early inbox read). */
  withAsk?: boolean;
  /**
   * Inbox sequence of a post that woke the actor: the activation reads its inbox until it has
   * seen it (from the stream's leader if the replicas do not show it), as if a hint had named it.
   */
  pendingSeq?: number;
}

/** A host's refusal because another writer claimed the directory entry first. */
export function racedError(message: string): TroupeError {
  return new TroupeError('UNAVAILABLE', message, { details: { raced: true } });
}

/** True for a host's refusal because another writer claimed the directory entry first. */
export function isRaced(err: unknown): boolean {
  return err instanceof TroupeError && err.details?.['raced'] === true;
}

/** `host.<id>.deactivate` request. */
export const HostDeactivateRequestSchema = z.object({ addr: AddressSchema });
/**
 * `host.<id>.ping` request (an empty body is `{}`). `holds`: also say whether this host holds an
 * activation of `addr` at `epoch` — a placer checks a live directory entry that got an ask no
 * responder, since an activation whose release failed leaves its entry naming a live host.
 */
export const HostPingRequestSchema = z.object({
  holds: z.object({ addr: AddressSchema, epoch: z.number().int().nonnegative() }).optional(),
});
/** A `host.<id>.ping` request. */
export type HostPingRequest = z.input<typeof HostPingRequestSchema>;
/** `host.<id>.ping` reply. */
export const HostPingReplySchema = z.object({
  hostId: z.string(),
  incarnation: z.string(),
  activations: z.number().int(),
  /** The answer to the request's `holds` (absent when it asked none). */
  holds: z.boolean().optional(),
});
/** A decoded ping reply. */
export type HostPingReply = z.infer<typeof HostPingReplySchema>;

/** Reserved message type of the "you have mail" hint sent to a live actor after a post. */
export const MAIL_HINT_TYPE = '$mail';

/**
 * Envelope of a core-NATS message to a live actor (ask, tell, post hint). Carried in the payload
 * rather than in headers: header encoding and parsing was the largest per-message cost of a tell.
 *   t: message type; m: the message; d: absolute deadline (ms since epoch) of an ask;
 *   s: sender address `kind/id`; i: 1 = refuse with BUSY while a turn runs (requireIdle);
 *   k: interval (ms) of the signs of life the asker watches for (`AskOptions.livenessMs`).
 */
export interface CoreEnvelope {
  t: string;
  m?: unknown;
  d?: number;
  s?: string;
  i?: 1;
  k?: number;
  /**
   * The asker's id for the ask, the same in each of its rounds: an activation that took the ask
   * answers a repeat with that ask's answer instead of running it again (see `AskRepeats`).
   */
  n?: string;
}

/** Reads an envelope; undefined when the payload is not one. */
export function parseCoreEnvelope(value: unknown): CoreEnvelope | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v['t'] !== 'string') return undefined;
  if (v['d'] !== undefined && typeof v['d'] !== 'number') return undefined;
  if (v['s'] !== undefined && typeof v['s'] !== 'string') return undefined;
  if (v['k'] !== undefined && typeof v['k'] !== 'number') return undefined;
  if (v['n'] !== undefined && (typeof v['n'] !== 'string' || v['n'].length > 64)) return undefined;
  return v as unknown as CoreEnvelope;
}
