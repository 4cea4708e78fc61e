import { randomBytes } from 'node:crypto';
import {
  type ActorAddress,
  coordSubject,
  decodeErrorHeaders,
  delay,
  Header,
  type Logger,
  timeoutError,
  TroupeError,
} from '@troupe/proto';
import { headers as natsHeaders, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { type JetStreamClient } from '@nats-io/jetstream';
import { decodeJson, encodeJson } from './json-codec';
import { isNatsTimeout } from './nats-errors';
import {
  ACTIVATION_KEEPALIVE_MS,
  AskKeepalive,
  DEFAULT_ASK_KEEPALIVE_MS,
  isLongAsk,
  KEEPALIVE_HEADER,
  SILENCE_INTERVALS,
} from './ask-keepalive';
import {
  type LivenessWatch,
  NO_RESPONDERS,
  type Requester,
  requesterOf,
  ResponderSilentError,
} from './requester';
import { TellBatcher } from './tell-batcher';
import { type PushedMessage } from './inbox-reader';
import {
  ANSWER_HEADER,
  isPlacerStopped,
  type ActivateReply,
  ActivateReplySchema,
  type CoreEnvelope,
} from './protocol';

/**
 * How long an activation request waits for a placement service to appear when none answers.
 * Placers run on the leading coordinator only, so none answers while the lease changes hands (a
 * leader that stepped down after a stall, a standby taking over from a dead leader: the lease
 * time plus one renewal, 6 s by default). A cluster with no coordinator at all still fails soon.
 */
export const PLACER_GRACE_MS = 10_000;

/**
 * How an activation request without an ask watches the placer: signs of life every
 * {@link ACTIVATION_KEEPALIVE_MS} (asked for with {@link KEEPALIVE_HEADER}), asked again after
 * {@link SILENCE_INTERVALS} of silence. Before, a placer killed with the request, or an answer lost
 * to a NATS server's restart, held the requester until its deadline (chaos seed 8038: a task
 * waited 30 s to destroy a sandbox).
 */
const PLACER_WATCH: LivenessWatch = {
  silenceMs: ACTIVATION_KEEPALIVE_MS * SILENCE_INTERVALS,
  fromStart: true,
};

/** Scheduling hints a ref passes with activation requests. */
export interface PlacementHints {
  /** Job the actor works for: fair scheduling and per-job limits; posts carry it as `Troupe-Job`. */
  jobId?: string;
  /** Labels the host must carry. */
  labels?: Record<string, string>;
  /** Prefer the host of this actor (affinity, e.g. a sandbox near its agent). */
  near?: ActorAddress;
}

/** What refs and activations share: the connection and the way to ask for an activation. */
export class Transport {
  /**
   * A placement service in this process: activation requests skip the NATS round trip to it.
   * Only a {@link LocalPlacer} is installed here (a coordinator's placer answers over NATS).
   */
  localPlacer?: (request: {
    addr: ActorAddress;
    deadlineMs: number;
    jobId?: string;
    labels?: Record<string, string>;
    near?: ActorAddress;
    verifyLive?: boolean;
  }) => Promise<ActivateReply>;

  /**
   * Live activations in this process: a post from this process tells the addressee it has mail
   * at once (synchronously after the stream's ack), instead of a hint over NATS; the placer's
   * inbox watcher in this process hands over the message itself (`push`). False when no
   * activation of `addr` in this process took the hint (none, or one stopping).
   */
  localMailHint?: (addr: ActorAddress, seq: number, push?: PushedMessage) => boolean;

  /** Whether an activation of `addr` in this process takes messages (set by its host). */
  liveHere?: (addr: ActorAddress) => boolean;

  /**
   * True while a placer's inbox watcher runs in this process and hands whole messages to the
   * activations here (see `PlacementService`): a post from this process to one of them sends no
   * hint, since the watcher's hand-over, which comes right after the stream's ack, saves the read
   * a hint would start.
   */
  watcherPushes = false;

  /** Request/reply for asks and activation requests (see {@link Requester}). */
  readonly requester: Requester;
  /** Signs of life for the long asks this process's activations hold (see {@link AskKeepalive}). */
  readonly keepalive: AskKeepalive;
  /** Tells (and mail hints) to actors, batched per subject (see {@link TellBatcher}). */
  readonly tells: TellBatcher;

  constructor(
    readonly cluster: string,
    readonly nc: NatsConnection,
    readonly js: JetStreamClient,
    readonly log: Logger,
    /** Interval between signs of life of a long ask; the same on every process of a cluster. */
    readonly askKeepaliveMs: number = DEFAULT_ASK_KEEPALIVE_MS,
  ) {
    this.requester = requesterOf(nc);
    this.keepalive = new AskKeepalive(nc, askKeepaliveMs);
    this.tells = new TellBatcher(nc, log);
  }

  private readonly askIdPrefix = randomBytes(6).toString('base64url');
  private asks = 0;

  /** A new id for one `ask()`, unique in the cluster (envelope `n`, see `AskRepeats`). */
  nextAskId(): string {
    return this.askIdPrefix + (++this.asks).toString(36);
  }

  /**
   * How an ask of `timeoutMs` watches its host: a long ask (see {@link isLongAsk}) fails when
   * the host is silent for {@link SILENCE_INTERVALS} intervals; a short one is not watched. An
   * ask whose asker chose an interval (`intervalMs`, already at least
   * `MIN_ASK_KEEPALIVE_MS`) is watched at that interval whatever its length.
   */
  liveness(timeoutMs: number, fromStart: boolean, intervalMs?: number): LivenessWatch | undefined {
    if (intervalMs !== undefined) return { silenceMs: intervalMs * SILENCE_INTERVALS, fromStart };
    if (!isLongAsk(timeoutMs, this.askKeepaliveMs)) return undefined;
    return { silenceMs: this.askKeepaliveMs * SILENCE_INTERVALS, fromStart };
  }

  /**
   * Asks the placement service (`coord.sched.activate`) to make `addr` live and waits until it is.
   * Throws UNAVAILABLE when no placer answers, or the placer's error.
   */
  async activate(
    addr: ActorAddress,
    options: { timeoutMs: number; signal?: AbortSignal; hints?: PlacementHints },
  ): Promise<ActivateReply> {
    options.signal?.throwIfAborted();
    if (this.localPlacer) {
      return this.localPlacer({
        addr,
        deadlineMs: Date.now() + options.timeoutMs,
        ...options.hints,
      });
    }
    const reply = await this.requestActivation(addr, options, undefined, PLACER_WATCH);
    const error = decodeErrorHeaders(reply.headers);
    if (error) throw error;
    return ActivateReplySchema.parse(decodeJson(reply.data));
  }

  /**
   * Like {@link activate}, for an ask that found no responder: the ask travels with the request,
   * and a placer that starts the activation on another host hands it over; that host answers.
   * Returns the answer (a reply to handle like the ask's own), or undefined when the actor is
   * live and the asker must send the ask itself. Throws the placer's error.
   */
  async activateWithAsk(
    addr: ActorAddress,
    ask: CoreEnvelope,
    options: {
      timeoutMs: number;
      signal?: AbortSignal;
      hints?: PlacementHints;
      /** Watch the host that takes the ask over (it sends a first sign of life at once). */
      liveness?: LivenessWatch;
    },
  ): Promise<Msg | undefined> {
    if (this.localPlacer) {
      options.signal?.throwIfAborted();
      await this.localPlacer({
        addr,
        deadlineMs: Date.now() + options.timeoutMs,
        ...options.hints,
        verifyLive: true,
      });
      return undefined;
    }
    options.signal?.throwIfAborted();
    // The placer is watched until it hands the ask over: one killed holding it (a leading
    // coordinator's kill -9) left the asker waiting to its deadline, since only a host's signs
    // were watched, and only from the first (chaos seed 8237: a sandbox's create, 120 s). A
    // silent placer is not asked again — it may have handed the ask over — and the ask fails
    // (retryable, like a silent host's).
    const watch: LivenessWatch = {
      ...PLACER_WATCH,
      handOver: { placerSign: String(ACTIVATION_KEEPALIVE_MS), after: options.liveness },
    };
    const reply = await this.requestActivation(addr, options, ask, watch);
    if (reply.headers?.get(ANSWER_HEADER)) return reply;
    const error = decodeErrorHeaders(reply.headers);
    if (error) throw error;
    return undefined;
  }

  private async requestActivation(
    addr: ActorAddress,
    options: { timeoutMs: number; signal?: AbortSignal; hints?: PlacementHints },
    ask: CoreEnvelope | undefined,
    liveness?: LivenessWatch,
  ): Promise<Msg> {
    const subject = coordSubject(this.cluster, 'sched', 'activate');
    const deadline = Date.now() + options.timeoutMs;
    // No placer answers while the coordinators' lease changes hands, and one stepping down refuses
    // what it has not placed: wait for the next leader, from the first such answer.
    let graceEnd: number | undefined;
    const body = encodeJson({ addr, ...options.hints, ...(ask ? { ask } : {}) });
    for (let pause = 50; ; pause = Math.min(pause * 2, 500)) {
      const timeoutMs = Math.max(1, deadline - Date.now());
      let reply;
      try {
        const h = natsHeaders();
        h.set(Header.DEADLINE, String(deadline));
        if (liveness === PLACER_WATCH || liveness?.handOver) {
          h.set(KEEPALIVE_HEADER, String(ACTIVATION_KEEPALIVE_MS));
        }
        reply = await this.requester.request(subject, body, {
          timeoutMs,
          headers: h,
          ...(liveness ? { liveness } : {}),
        });
      } catch (err) {
        if (err instanceof ResponderSilentError) {
          // The placer died with the request (a killed leader), or its answer was lost (its
          // NATS server restarted): ask again — a placer that is still at it shares the attempt,
          // and the directory's compare-and-set makes a new one agree with what was done.
          if (liveness === PLACER_WATCH && Date.now() + pause < deadline) {
            this.log.info({ actor: `${addr.kind}/${addr.id}` }, 'placer fell silent: asking again');
            await delay(pause, options.signal);
            continue;
          }
          throw err;
        }
        if (isNatsTimeout(err)) {
          throw timeoutError(`activation of ${addr.kind}/${addr.id}`, options.timeoutMs);
        }
        throw new TroupeError('UNAVAILABLE', 'activation request failed', { cause: err });
      }
      if (reply !== NO_RESPONDERS && !placerStopped(reply)) return reply;
      graceEnd ??= Math.min(deadline, Date.now() + PLACER_GRACE_MS);
      if (Date.now() + pause >= graceEnd) {
        if (reply !== NO_RESPONDERS) return reply;
        throw new TroupeError(
          'UNAVAILABLE',
          `no placement service answers on ${subject}: start a coordinator, or an ActorSystem with placement 'local'`,
        );
      }
      await delay(pause, options.signal);
    }
  }
}

/**
 * Whether the placer's reply refuses the request because it stopped before placing the actor
 * ({@link placerStoppedError}); never a host's answer to a handed-over ask, which may carry any
 * error its handler threw.
 */
function placerStopped(reply: Msg): boolean {
  if (!reply.headers || reply.headers.get(ANSWER_HEADER)) return false;
  return isPlacerStopped(decodeErrorHeaders(reply.headers));
}
