import {
  type ActorAddress,
  actorSubject,
  decodeErrorHeaders,
  delay,
  ErrorReason,
  formatAddress,
  raceSignal,
  throwIfAborted,
  Header,
  inboxSubject,
  TroupeError,
  timeoutError,
  validateAddress,
} from '@troupe/proto';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';
import {
  type AnyActorDefinition,
  type MessageOf,
  type MessageTypeOf,
  type ReplyOf,
} from './actor-definition';
import { MIN_ASK_KEEPALIVE_MS } from './internal/ask-keepalive';
import { decodeJson, encodeJson } from './internal/json-codec';
import { publishToStream } from './internal/direct-get';
import { isNatsTimeout } from './internal/nats-errors';
import { NO_RESPONDERS, ResponderSilentError } from './internal/requester';
import { type CoreEnvelope, MAIL_HINT_TYPE } from './internal/protocol';
import { type PlacementHints, type Transport } from './internal/transport';

/** Activation rounds an ask makes before it says the actor does not stay active. */
const MAX_ACTIVATION_ROUNDS = 12;
/** First pause between activation rounds that did not answer (doubling, at most 400 ms). */
const ACTIVATION_BACKOFF_MS = 25;

/** Options of {@link ActorRef.ask}. */
export interface AskOptions {
  /**
   * Deadline for the whole ask, including activating a sleeping target.
   * @default 30000
   */
  timeoutMs?: number;
  /** Cancels the wait (the reason is kept). */
  signal?: AbortSignal;
  /** Refuse with BUSY instead of queueing when the target is in the middle of a turn. */
  requireIdle?: boolean;
  /**
   * Watch the target's host at this interval, whatever the ask's length: the host sends a sign
   * of life this often while the ask waits or runs, and the ask fails UNAVAILABLE
   * (`details.hostSilent`) after four intervals without one — a host that died or was cut off
   * is noticed in seconds, not at the deadline. At least 100 ms. By default only asks of 12
   * cluster keepalive intervals or more are watched (`askKeepaliveMs`, 5 s: asks of a minute).
   */
  livenessMs?: number;
}

/** Options of {@link ActorRef.post}. */
export interface PostOptions {
  /** Deduplication id: a second post with the same id inside the dedupe window is dropped. */
  dedupeId?: string;
  /** Cancels the publish wait. */
  signal?: AbortSignal;
  /**
   * False: send no "you have mail" hint to a live activation; the placement service's inbox
   * watcher wakes the actor or hints it (one hop later). For posts to an actor that is almost
   * certainly asleep (a job's first `run` to a task actor), whose hint would reach nobody.
   */
  hint?: boolean;
}

/** Result of a post: where the message landed in the inbox stream. */
export interface PostReceipt {
  seq: number;
  /** True when the dedupe id had been seen: the message was not appended again. */
  duplicate: boolean;
}

const DEFAULT_ASK_TIMEOUT_MS = 30_000;

/**
 * Whether `err` is an ask's failure for its host's silence (see `AskOptions.livenessMs`): the
 * host died, stopped or was cut off, and the ask may or may not have run. Asking again reaches
 * the actor's next activation once the host is declared dead.
 */
export function isHostSilent(err: unknown): boolean {
  return (
    err instanceof TroupeError && err.code === 'UNAVAILABLE' && err.details?.['hostSilent'] === true
  );
}

/**
 * Whether `err` is an ask's failure because its turn's state commit failed (the state store was
 * unreachable, e.g. while a NATS server restarts): the turn's effects on the state were rolled
 * back to its last commit, and an idempotent ask may be asked again.
 */
export function isCommitFailed(err: unknown): boolean {
  return (
    err instanceof TroupeError &&
    err.code === 'UNAVAILABLE' &&
    err.details?.['commitFailed'] === true
  );
}

/**
 * Untyped handle on an actor: the three sends of ARCHITECTURE.md §4. Payloads are validated by
 * the receiving activation.
 */
export class UntypedActorRef {
  /** @internal */
  constructor(
    readonly address: ActorAddress,
    private readonly transport: Transport,
    private readonly sender?: ActorAddress,
    private readonly hints?: PlacementHints,
  ) {
    validateAddress(address);
    this.subject = actorSubject(transport.cluster, address);
    this.senderText = sender ? formatAddress(sender) : undefined;
  }

  private readonly subject: string;
  private readonly senderText: string | undefined;

  /** A ref to the same actor whose activations and posts carry these scheduling hints. */
  withHints(hints: PlacementHints): UntypedActorRef {
    return new UntypedActorRef(this.address, this.transport, this.sender, {
      ...this.hints,
      ...hints,
    });
  }

  /**
   * Request/reply over core NATS. A sleeping target is activated through the placement service
   * and the request retried, all within `timeoutMs`.
   */
  async ask(type: string, msg: unknown, options: AskOptions = {}): Promise<unknown> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_ASK_TIMEOUT_MS;
    const deadline = Date.now() + timeoutMs;
    const subject = this.subject;
    const envelope: CoreEnvelope = { t: type, m: msg, d: deadline, n: this.transport.nextAskId() };
    if (this.senderText) envelope.s = this.senderText;
    if (options.requireIdle) envelope.i = 1;
    const intervalMs =
      options.livenessMs === undefined
        ? undefined
        : Math.max(MIN_ASK_KEEPALIVE_MS, Math.floor(options.livenessMs));
    if (intervalMs !== undefined) envelope.k = intervalMs;
    const data = encodeJson(envelope);
    // Created after an await, the timeout error still names the waiter: V8's async stack traces
    // keep the caller chain. Building it up front cost an Error per ask.
    const timeout = () => timeoutError(`ask ${type} to ${formatAddress(this.address)}`, timeoutMs);
    // A long ask hears from its host while it waits or runs, and fails soon after the host
    // falls silent (died, stopped, cut off) rather than at its deadline.
    const direct = this.transport.liveness(timeoutMs, true, intervalMs);
    const handedOver = this.transport.liveness(timeoutMs, false, intervalMs);
    const silent = (err: ResponderSilentError) =>
      err.beforeHandOver
        ? new TroupeError(
            'UNAVAILABLE',
            `ask ${type} to ${formatAddress(this.address)}: the placement service holding it showed no sign of life for ${err.silenceMs} ms (a coordinator may have died; the ask may or may not have run)`,
            { cause: err, retryable: true, details: { placerSilent: true } },
          )
        : new TroupeError(
            'UNAVAILABLE',
            `ask ${type} to ${formatAddress(this.address)}: its host showed no sign of life for ${err.silenceMs} ms (it may have died; the ask may or may not have run)`,
            { cause: err, retryable: true, details: { hostSilent: true } },
          );
    let activations = 0;
    for (;;) {
      throwIfAborted(options.signal);
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw timeout();
      let reply;
      // Tells this process made to the actor before the ask reach it first.
      this.transport.tells.flush(subject);
      try {
        reply = await raceSignal(
          this.transport.requester.request(subject, data, {
            timeoutMs: remaining,
            ...(direct ? { liveness: direct } : {}),
          }),
          options.signal,
        );
      } catch (err) {
        if (err instanceof ResponderSilentError) throw silent(err);
        if (isNatsTimeout(err)) throw timeout();
        if (err instanceof TroupeError) throw err;
        throw new TroupeError('UNAVAILABLE', `ask to ${formatAddress(this.address)} failed`, {
          cause: err,
        });
      }
      if (reply === NO_RESPONDERS) {
        // Nobody is live at this address: have it activated, handing the ask over (the host
        // that starts it answers), or try again. A few rounds cover an activation that
        // passivates again between the placer's reply and our retry, and one still on its way
        // out (the directory lists it until its passivation ends: an actor that passivates after
        // every turn is asked again while the last turn's passivation runs).
        if (++activations > MAX_ACTIVATION_ROUNDS) {
          throw new TroupeError(
            'UNAVAILABLE',
            `${formatAddress(this.address)} does not stay active`,
            // Transient like `moved` (an activation on its way out), for callers that wait.
            { details: { inactive: true } },
          );
        }
        try {
          reply = await raceSignal(
            this.transport.activateWithAsk(this.address, envelope, {
              timeoutMs: Math.max(1, deadline - Date.now()),
              ...(options.signal ? { signal: options.signal } : {}),
              ...(this.hints ? { hints: this.hints } : {}),
              ...(handedOver ? { liveness: handedOver } : {}),
            }),
            options.signal,
          );
        } catch (err) {
          if (err instanceof ResponderSilentError) throw silent(err);
          throw err;
        }
        if (!reply) {
          await this.activationPause(activations, deadline, options.signal);
          continue;
        }
      }
      const error = reply.headers ? decodeErrorHeaders(reply.headers) : undefined;
      if (error?.details?.['moved'] === true) {
        // We reached an activation on its way out (passivating, or fenced): have the actor
        // activated again and retry, giving a passivation in progress time to end.
        if (++activations > MAX_ACTIVATION_ROUNDS) throw error;
        await this.activationPause(activations, deadline, options.signal);
        await this.activate(deadline, options.signal);
        continue;
      }
      if (error) throw error;
      return decodeJson(reply.data);
    }
  }

  /**
   * Before activation round `round` of an ask: the first retries at once (an activation just
   * started answers it); later ones wait out a passivation in progress, 25 ms doubling to 400 ms.
   */
  private async activationPause(
    round: number,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    if (round <= 1) return;
    const pause = Math.min(ACTIVATION_BACKOFF_MS * 2 ** (round - 2), 400);
    await delay(Math.min(pause, Math.max(0, deadline - Date.now())), signal);
  }

  private async activate(deadline: number, signal: AbortSignal | undefined): Promise<void> {
    await this.transport.activate(this.address, {
      timeoutMs: Math.max(1, deadline - Date.now()),
      ...(signal ? { signal } : {}),
      ...(this.hints ? { hints: this.hints } : {}),
    });
  }

  /**
   * Fire and forget over core NATS: at most once, delivered only to a live activation. The tells
   * made to one actor before the current task ends travel in one message, in order (see
   * `TellBatcher`); throws at once for a payload larger than the server's `max_payload`.
   */
  tell(type: string, msg: unknown): void {
    const envelope: CoreEnvelope = { t: type, m: msg };
    if (this.senderText) envelope.s = this.senderText;
    this.transport.tells.tell(this.subject, envelope);
  }

  /**
   * Durable send: appends to the target's inbox stream (with `Nats-Msg-Id` = `dedupeId`), then
   * hints a live activation. Survives restarts of any process; wakes a sleeping target.
   */
  async post(type: string, msg: unknown, options: PostOptions = {}): Promise<PostReceipt> {
    throwIfAborted(options.signal);
    const h = this.headers(type);
    if (options.dedupeId) h.set(Header.MSG_ID, options.dedupeId);
    let ack;
    try {
      ack = await raceSignal(
        publishToStream(
          this.transport.requester,
          inboxSubject(this.transport.cluster, this.address),
          encodeJson(msg),
          h,
        ),
        options.signal,
      );
    } catch (err) {
      if (err instanceof TroupeError) throw err;
      // No acknowledgement in time: the inbox stream electing a leader, most likely. Marked as a
      // store outage, like no stream answering, so a handler failing on it is retried without
      // counting towards a dead letter (a duplicate of a post that was stored after all is
      // dropped by its dedupe id).
      throw new TroupeError('UNAVAILABLE', `post to ${formatAddress(this.address)} failed`, {
        cause: err,
        ...(isNatsTimeout(err) ? { reason: ErrorReason.STORE_UNAVAILABLE } : {}),
      });
    }
    if (!ack.duplicate && options.hint !== false) {
      // Fast path to a live activation; the placement service's inbox watcher is the durable path.
      // One in this process is told directly (a hint over NATS to it as well cost a message out
      // and one back per post), or not at all when this process's watcher hands it the message
      // (a hint would start a read of it first: posts to live actors here ran a third slower).
      // One elsewhere gets a hint batched like a tell: the hints of many posts to one actor
      // travel together.
      const transport = this.transport;
      if (transport.watcherPushes && transport.liveHere?.(this.address) === true) {
        // The watcher's delivery is the hint.
      } else if (transport.localMailHint?.(this.address, ack.seq) !== true) {
        const hint: CoreEnvelope = { t: MAIL_HINT_TYPE, m: { seq: ack.seq } };
        this.transport.tells.tell(this.subject, hint);
      }
    }
    return { seq: ack.seq, duplicate: ack.duplicate };
  }

  private headers(type: string): MsgHdrs {
    const h = natsHeaders();
    h.set(Header.MSG_TYPE, type);
    if (this.sender) h.set(Header.SENDER, formatAddress(this.sender));
    if (this.hints?.jobId) h.set(Header.JOB, this.hints.jobId);
    return h;
  }
}

/** Typed handle on an actor of definition `D`: message types, payloads and replies are checked. */
export class ActorRef<D extends AnyActorDefinition> {
  /** @internal */
  constructor(private readonly inner: UntypedActorRef) {}

  /** The target's address. */
  get address(): ActorAddress {
    return this.inner.address;
  }

  /** See {@link UntypedActorRef.ask}. */
  async ask<K extends MessageTypeOf<D>>(
    type: K,
    msg: MessageOf<D, K>,
    options?: AskOptions,
  ): Promise<ReplyOf<D, K>> {
    return (await this.inner.ask(type, msg, options)) as ReplyOf<D, K>;
  }

  /** See {@link UntypedActorRef.tell}. */
  tell<K extends MessageTypeOf<D>>(type: K, msg: MessageOf<D, K>): void {
    this.inner.tell(type, msg);
  }

  /** See {@link UntypedActorRef.post}. */
  async post<K extends MessageTypeOf<D>>(
    type: K,
    msg: MessageOf<D, K>,
    options?: PostOptions,
  ): Promise<PostReceipt> {
    return this.inner.post(type, msg, options);
  }

  /** The untyped ref. */
  get untyped(): UntypedActorRef {
    return this.inner;
  }

  /** A ref to the same actor whose activations and posts carry these scheduling hints. */
  withHints(hints: PlacementHints): ActorRef<D> {
    return new ActorRef(this.inner.withHints(hints));
  }
}
