import { type TellBatcher } from './internal/tell-batcher';
import {
  type ActorAddress,
  actorSubject,
  coordSubject,
  decodeErrorHeaders,
  delay,
  encodeErrorHeaders,
  errorCode,
  ErrorReason,
  formatAddress,
  hasReason,
  Header,
  hostSubject,
  inboxStreamName,
  inboxSubject,
  inboxSubjectFilter,
  type Logger,
  parseActorKey,
  parseInboxSubject,
  parseWith,
  toTroupeError,
  TroupeError,
  validateAddress,
} from '@troupe/proto';
import {
  headers as natsHeaders,
  type NatsConnection,
  type Subscription,
} from '@nats-io/transport-node';
import {
  AckPolicy,
  DeliverPolicy,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import {
  type Directory,
  type DirectoryEntry,
  isLiveState,
  jobScopeOf,
  type VersionedEntry,
} from './directory';
import { PULL_EXPIRES_MS } from './pull-expiry';
import { type PushedMessage } from './internal/inbox-reader';
import { type StateStore } from './state-store';
import { decodeJson, encodeJson } from './internal/json-codec';
import {
  ACTIVATION_KEEPALIVE_MS,
  ACTIVATION_RESEND_MS,
  type AskKeepalive,
  KEEPALIVE_HEADER,
  SILENCE_INTERVALS,
  WORKING_HEADER,
} from './internal/ask-keepalive';
import { isNoResponders } from './internal/nats-errors';
import { NO_RESPONDERS, type Requester } from './internal/requester';
import {
  ActivateRequestSchema,
  type ActivateReply,
  type ActivationPlacement,
  type CoreEnvelope,
  type ForwardedAsk,
  type HostPingReply,
  HostPingReplySchema,
  type HostPingRequest,
  isRaced,
  MAIL_HINT_TYPE,
  placerStoppedError,
} from './internal/protocol';

/** Whether an activation request failed without the host's answer (it may have acted on it). */
function isOutcomeUnknown(err: unknown): boolean {
  return err instanceof TroupeError && err.details?.['outcomeUnknown'] === true;
}

/** Host refusals (draining, full) tolerated for one activation request before giving up. */
const MAX_REFUSALS = 10;

/** Default of {@link PlacementServiceOptions.wakeMaxAckPending}. */
const DEFAULT_WAKE_MAX_ACK_PENDING = 10_000;

/** The header a headers-only consumer's delivery carries instead of the payload. */
const MSG_SIZE_HEADER = 'Nats-Msg-Size';

/**
 * The last delivery epoch begun in this process, by any placer: epochs are never reused, so the
 * pushes of a placer that stopped and of the one started after it never look like one run.
 */
let lastEpoch = 0;

/** What a placement decision is made from. */
export interface PlacementRequest {
  addr: ActorAddress;
  /** Job the activation works for (fair scheduling and per-job limits). */
  jobId?: string;
  /** Labels the host must carry. */
  labels?: Record<string, string>;
  /** Place near this actor's host when possible (affinity). */
  near?: ActorAddress;
  /** Absolute deadline (ms since epoch) after which the requester has given up. */
  deadlineMs: number;
  /**
   * The directory entry as the caller has just read it: the first decision uses it instead of
   * reading again (every later attempt reads; the host's CAS catches a stale one).
   */
  known?: VersionedEntry;
  /**
   * An ask to hand to the host that this request makes start the activation (it answers `r`
   * itself). Not handed over when the actor is found live or is activated in this process.
   */
  ask?: ForwardedAsk;
  /**
   * Inbox sequence of the post this activation is for (a wake-up): the activation reads its
   * inbox until it has seen it, as if a hint had named it.
   */
  pendingSeq?: number;
  /**
   * The caller's ask found no responder at the actor's subject: an entry found live is checked
   * with its host first, and put to sleep and placed again when the host no longer holds it (an
   * activation that ended while the directory could not be written, e.g. during a NATS server
   * restart, leaves its entry naming a live host, and every ask would find nobody there).
   */
  verifyLive?: boolean;
  /**
   * The directory revision of the actor's entry the placement decision is based on (set by the
   * placement service before it asks the {@link HostSelector}): a later write of the entry that
   * is not live means this placement has come and gone, or lost its claim.
   */
  directoryRevision?: number;
}

/** A placement decision. */
export interface PlacementTarget {
  hostId: string;
  incarnation?: string;
}

/**
 * Chooses the host for an activation; may wait (a fair queue) until one has room, and throws
 * UNAVAILABLE when nothing fits.
 */
export type HostSelector = (request: PlacementRequest) => Promise<PlacementTarget>;

/**
 * What the placement service uses of the connection: an `ActorSystem`'s `transport` is one.
 */
export interface PlacementTransport {
  /** Cluster name: subjects and stream names are built from it. */
  readonly cluster: string;
  /** Answers activation requests, pings hosts, publishes mail hints. */
  readonly nc: Pick<NatsConnection, 'subscribe' | 'request' | 'publish'>;
  /** Reads the inbox stream through the wake-on-post consumer. */
  readonly js: Pick<JetStreamClient, 'consumers'>;
  /** Sends activation requests to hosts ("no responders" is a value there, not an exception). */
  readonly requester: Pick<Requester, 'request'>;
  /** Sends mail hints, batched per actor like tells. */
  readonly tells: Pick<TellBatcher, 'tell'>;
  /** Sends signs of life to requesters that watch us (see `KEEPALIVE_HEADER`). */
  readonly keepalive: Pick<AskKeepalive, 'track'>;
  /** Hints an activation live in this process directly (set when one can be). */
  readonly localMailHint?: (addr: ActorAddress, seq: number, push?: PushedMessage) => boolean;
  /**
   * Set while this placer's watcher hands whole messages to the activations of this process
   * (with `localMailHint`): posts from here to them then send no hint of their own.
   */
  watcherPushes?: boolean;
}

/** Options of {@link PlacementService}. */
export interface PlacementServiceOptions {
  transport: PlacementTransport;
  jsm: JetStreamManager;
  directory: Directory;
  states: StateStore;
  log: Logger;
  /** Picks the host for a new activation. */
  selectHost: HostSelector;
  /**
   * Liveness of a host incarnation. Default: ping the host (cached 2 s). The coordinator answers
   * from its heartbeat registry instead.
   */
  hostAlive?: (hostId: string, incarnation: string | undefined) => Promise<boolean>;
  /**
   * A recent view of a directory entry that is *not* live (from a watch of the directory), used
   * instead of a KV read for the first placement decision. Only a SLEEPING (or absent, revision
   * 0) view may be returned: the host's claim is a CAS on that revision, so a stale view costs a
   * refused claim and a real read, never a second activation. Undefined: read the KV.
   */
  peekDirectory?: (addr: ActorAddress) => VersionedEntry | undefined;
  /** Called when a placement fails or its activation has been started (for load accounting). */
  onPlacementFailed?: (request: PlacementRequest, target: PlacementTarget) => void;
  /**
   * An ACTIVATING entry older than this is considered abandoned.
   * @default 15000
   */
  activationTimeoutMs?: number;
  /**
   * Attempts to start a failing activation (with backoff) before it is marked STOPPED.
   * @default 3
   */
  maxActivationAttempts?: number;
  /**
   * Interval of the sweep that finds actors of dead hosts with pending messages.
   * @default 5000
   */
  sweepIntervalMs?: number;
  /**
   * The directory entries the recovery sweep looks at: it acts only on live entries and on
   * SLEEPING ones with `recover` set, so these suffice. A placer that watches the directory
   * gives them from memory; without this the sweep lists the whole directory, reading every
   * entry — one per actor the cluster ever ran (every task of every job kept), every
   * `sweepIntervalMs`.
   */
  sweepCandidates?: () => Map<string, VersionedEntry>;
  /**
   * The host in this process, if any: activations placed on it are started by a direct call
   * instead of a request over NATS.
   */
  localHost?: {
    hostId: string;
    activate(addr: ActorAddress, epoch: number, placement: ActivationPlacement): Promise<unknown>;
    /**
     * True when `addr` has a started activation in this process that takes messages: the
     * wake-on-post watcher then hints it without reading the directory.
     */
    isLive?(addr: ActorAddress): boolean;
    /** Whether an activation of `addr` at `epoch` has not ended here (see `verifyLive`). */
    holds?(addr: ActorAddress, epoch: number): boolean;
  };
  /**
   * Name of the durable inbox-watcher consumer (shared by every placer of the cluster).
   * @default 'troupe-wake'
   */
  consumerName?: string;
  /**
   * Most posts the watcher's consumer holds unacknowledged (wakes waiting for capacity), set when
   * this placer creates it; the server delivers nothing more until one is settled.
   * @default 10000
   */
  wakeMaxAckPending?: number;
}

/**
 * The placement service: answers activation requests on `coord.sched.activate`, wakes sleeping
 * actors that receive posts (a durable consumer of the inbox stream, so nothing is forgotten
 * across restarts; it hands a post for an activation in this process to it), and recovers
 * actors of dead hosts. What varies is the host
 * selection: {@link LocalPlacer} puts everything on its own process; the coordinator selects
 * across the cluster under a fair scheduler.
 */
export class PlacementService {
  private readonly inFlight = new Map<string, Promise<PlacedReply>>();
  private readonly alive = new Map<string, { incarnation: string; atMs: number }>();
  private sub?: Subscription;
  private messages?: ConsumerMessages;
  private sweepTimer?: NodeJS.Timeout;
  private watcherDone?: Promise<void>;
  private closed = false;
  private sweeping = false;
  private readonly activationTimeoutMs: number;
  private readonly maxAttempts: number;
  private readonly sweepIntervalMs: number;
  private readonly consumerName: string;
  /** The watcher's delivery epoch and last delivery sequence (see {@link deliveryEpoch}). */
  private epoch = ++lastEpoch;
  private lastDelivery = 0;
  /** Whether the watcher hands whole messages to this process's activations. */
  private pushing = false;
  /** The watcher's messages not settled yet (acked, nacked or terminated). */
  private unsettled = 0;
  /** The consumer's `max_ack_pending` (see {@link updatePushes}). */
  private maxAckPending = DEFAULT_WAKE_MAX_ACK_PENDING;
  /** Activations this placer has performed (for stats and tests). */
  placements = 0;

  constructor(private readonly options: PlacementServiceOptions) {
    this.activationTimeoutMs = options.activationTimeoutMs ?? 15_000;
    this.maxAttempts = options.maxActivationAttempts ?? 3;
    this.sweepIntervalMs = options.sweepIntervalMs ?? 5_000;
    this.consumerName = options.consumerName ?? 'troupe-wake';
  }

  /** Starts answering activation requests, watching inboxes and sweeping. */
  async start(): Promise<void> {
    const { nc, cluster } = this.options.transport;
    this.sub = nc.subscribe(coordSubject(cluster, 'sched', 'activate'), {
      queue: 'troupe-placer',
      callback: (err, msg) => {
        if (err) return;
        let request: PlacementRequest;
        try {
          const req = parseWith(ActivateRequestSchema, decodeJson(msg.data), {
            prefix: 'activate',
          });
          request = {
            addr: validateAddress(req.addr),
            deadlineMs: Date.now() + this.activationTimeoutMs,
            ...(req.jobId ? { jobId: req.jobId } : {}),
            ...(req.labels ? { labels: req.labels } : {}),
            ...(req.near ? { near: validateAddress(req.near) } : {}),
            ...(req.ask && msg.reply
              ? { ask: { ...req.ask, r: msg.reply }, verifyLive: true }
              : {}),
          };
          const deadline = Number(msg.headers?.get(Header.DEADLINE) ?? '');
          if (Number.isFinite(deadline) && deadline > Date.now()) request.deadlineMs = deadline;
        } catch (e) {
          msg.respond(new Uint8Array(), { headers: encodeErrorHeaders(e) });
          return;
        }
        // A requester that watches us gets signs of life while we work on its request.
        const keepaliveMs = Number(msg.headers?.get(KEEPALIVE_HEADER) ?? '');
        const reply =
          keepaliveMs > 0
            ? this.options.transport.keepalive.track(msg, request.deadlineMs, false, keepaliveMs)
            : msg;
        this.activate(request).then(
          ({ hostId, epoch, answeredBy }) => {
            // The host that took the ask answers the asker itself. Tell the asker so: its
            // liveness watch starts now, not at the host's first sign of life, which never
            // comes when the host is cut off right after taking the ask.
            if (answeredBy === undefined || answeredBy !== msg.reply) {
              reply.respond(encodeJson({ hostId, epoch } satisfies ActivateReply));
            } else {
              const h = natsHeaders();
              h.set(WORKING_HEADER, 'handed-over');
              reply.respond(new Uint8Array(), { headers: h });
            }
          },
          (e: unknown) => reply.respond(new Uint8Array(), { headers: encodeErrorHeaders(e) }),
        );
      },
    });
    await this.startWatcher();
    this.sweepTimer = setInterval(() => void this.sweep(), this.sweepIntervalMs);
    this.sweepTimer.unref();
    void this.sweep();
  }

  /**
   * Stops everything; in-flight activations finish, or end as {@link placerStoppedError} (their
   * requesters ask the next placer) when they have not placed the actor yet.
   */
  async stop(): Promise<void> {
    this.closed = true;
    this.updatePushes();
    // Drain, not unsubscribe: a request the server routed here before it saw the UNSUB is still
    // answered (refused as stopped), where it vanished before and its asker waited out 4 s of
    // silence (chaos seed 9420: a coordinator stepping down after a stall).
    void this.sub?.drain().catch(() => undefined);
    clearInterval(this.sweepTimer);
    await this.messages?.close();
    await this.watcherDone;
    await Promise.allSettled([...this.inFlight.values()]);
  }

  /**
   * Makes `addr` live and returns where. Concurrent requests for one address share one attempt;
   * the directory CAS makes requests of different placers agree on a single activation.
   */
  activate(request: PlacementRequest | ActorAddress): Promise<PlacedReply> {
    const req: PlacementRequest =
      'addr' in request
        ? request
        : { addr: request, deadlineMs: Date.now() + this.activationTimeoutMs };
    const key = formatAddress(req.addr);
    const existing = this.inFlight.get(key);
    if (existing) {
      // A shared attempt gives up at its own deadline (a wake-up's is short): a request with a
      // later one goes on after it rather than fail with it.
      return existing.catch((err: unknown) => {
        if (this.closed || errorCode(err) !== 'TIMEOUT' || Date.now() >= req.deadlineMs) throw err;
        return this.activate(req);
      });
    }
    const p = this.doActivate(req).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, p);
    return p;
  }

  private async doActivate(request: PlacementRequest): Promise<PlacedReply> {
    const { addr } = request;
    const key = formatAddress(addr);
    const deadline = Math.max(request.deadlineMs, Date.now() + 1_000);
    let failures = 0;
    let refusals = 0;
    let waitMs = 5;
    let known = request.known ?? this.options.peekDirectory?.(addr);
    while (Date.now() < deadline) {
      // A placer that stopped (its coordinator stepped down) places nothing more: the asker asks
      // the next one, instead of this one's stop waiting for the placement's deadline.
      // Safe to send elsewhere: no host has taken the ask (a hand-over whose outcome was unknown
      // was settled as not taken before the loop came round, or ended the placement).
      if (this.closed) throw placerStoppedError(key);
      // The first decision may use a view the caller or the directory watch had; every later one
      // reads (that view was wrong if the host's claim raced, and may be again).
      const { entry, revision } = known ?? (await this.options.directory.get(addr));
      known = undefined;
      if (entry.state === 'STOPPED') {
        throw new TroupeError(
          'UNAVAILABLE',
          `${key} is STOPPED: ${entry.reason ?? 'no reason recorded'}`,
          {
            retryable: false,
          },
        );
      }
      if (isLiveState(entry.state) && entry.hostId) {
        const alive = await this.hostAlive(entry.hostId, entry.incarnation);
        const stuck =
          entry.state === 'ACTIVATING' && Date.now() - entry.updatedAtMs > this.activationTimeoutMs;
        if (alive && !stuck) {
          if (entry.state !== 'ACTIVATING') {
            const held = request.verifyLive
              ? await this.holdsActivation(entry.hostId, entry.incarnation, addr, entry.epoch)
              : undefined;
            if (held !== false) return { hostId: entry.hostId, epoch: entry.epoch };
            // The activation ended without releasing its entry: put it to sleep under the same
            // epoch (the next activation's bump fences any late write of the old one) and place
            // it again. The CAS fails if the entry changed since it was read: look again.
            this.options.log.warn(
              { actor: key, hostId: entry.hostId, epoch: entry.epoch },
              'directory entry names a host that no longer holds the actor: placing it again',
            );
            await this.options.directory.compareAndSet(addr, revision, {
              state: 'SLEEPING',
              epoch: entry.epoch,
              ...jobScopeOf(entry),
              updatedAtMs: Date.now(),
              reason: `host ${entry.hostId} no longer holds it`,
              recover: true,
            });
            continue;
          }
          // Someone else is activating it (two-step form): wait for that to finish.
          await delay(waitMs, undefined, { unref: true });
          waitMs = Math.min(200, waitMs * 2);
          continue;
        }
        // Its host is gone (or the activation hung): put it to sleep under the same epoch; the
        // next activation bumps the epoch, which fences the old host's writes.
        await this.options.directory.compareAndSet(addr, revision, {
          state: 'SLEEPING',
          epoch: entry.epoch,
          ...jobScopeOf(entry),
          updatedAtMs: Date.now(),
          reason: alive ? 'activation timed out' : `host ${entry.hostId} lost`,
          recover: true,
        });
        continue;
      }
      const target = await this.options.selectHost({ ...request, directoryRevision: revision });
      const epoch = entry.epoch + 1;
      // One-step form: the placer writes nothing; the chosen host claims the entry SLEEPING →
      // IDLE at `epoch` by CAS on `revision`, so of several placers (or hosts) only one wins.
      const placement: ActivationPlacement = {
        claimRevision: revision,
        ...(request.jobId ? { jobId: request.jobId } : {}),
        ...(request.pendingSeq !== undefined ? { pendingSeq: request.pendingSeq } : {}),
      };
      try {
        if (this.options.localHost?.hostId === target.hostId) {
          await this.options.localHost.activate(addr, epoch, placement);
        } else {
          await this.requestHostActivation(target.hostId, addr, epoch, placement, request.ask);
          if (request.ask) {
            this.placements++;
            return { hostId: target.hostId, epoch, started: true, answeredBy: request.ask.r };
          }
        }
        this.placements++;
        return {
          hostId: target.hostId,
          epoch,
          started: true,
          ...(request.pendingSeq !== undefined ? { pendingSeq: request.pendingSeq } : {}),
        };
      } catch (err) {
        this.options.onPlacementFailed?.(request, target);
        if (request.ask && isOutcomeUnknown(err)) {
          // The host may have the ask queued: it must never run a second time elsewhere.
          const settled = await this.settleHandOver(addr, revision, epoch, target);
          if (settled === 'host') {
            this.placements++;
            return { hostId: target.hostId, epoch, started: true, answeredBy: request.ask.r };
          }
        }
        // Another writer changed the entry first: nothing of ours was written; look again.
        if (isRaced(err)) continue;
        const error = toTroupeError(err);
        const refused = error.details?.['hostRefused'] === true || isNoResponders(err);
        // A host that refuses (draining, full, just died) says nothing about the actor: try
        // again, elsewhere, and never mark the actor STOPPED for it.
        if (refused) refusals++;
        else failures++;
        this.options.log.warn({ err: error, actor: key, failures, refusals }, 'activation failed');
        const current = await this.options.directory.get(addr);
        // Did the host claim the entry before failing? Then it is ours to put back to sleep.
        const ours =
          current.entry.epoch === epoch &&
          current.entry.hostId === target.hostId &&
          (target.incarnation === undefined ||
            current.entry.incarnation === undefined ||
            current.entry.incarnation === target.incarnation) &&
          isLiveState(current.entry.state);
        if (!ours && current.entry.epoch !== entry.epoch) continue; // someone moved on
        // A store the activation needs was unreachable (a stream electing a leader after a server
        // loss): the actor is not at fault, so it is never STOPPED for it. After the attempts it
        // is left asleep with `recover` set, and the recovery sweep places it again.
        const infrastructure = hasReason(error, ErrorReason.STORE_UNAVAILABLE);
        const exhausted = failures >= this.maxAttempts;
        const stop =
          !refused &&
          !infrastructure &&
          (exhausted || (!error.retryable && error.code !== 'UNAVAILABLE'));
        if (ours || stop) {
          await this.options.directory.compareAndSet(addr, current.revision, {
            state: stop ? 'STOPPED' : 'SLEEPING',
            epoch,
            ...jobScopeOf(current.entry),
            updatedAtMs: Date.now(),
            reason: `activation failed: ${error.message}`,
            ...(stop ? {} : { recover: true }),
          });
        } else if (
          infrastructure &&
          exhausted &&
          current.entry.state === 'SLEEPING' &&
          current.entry.recover !== true
        ) {
          // Best effort (a race or a failed write leaves it to the next wake or sweep).
          await this.options.directory
            .compareAndSet(addr, current.revision, { ...current.entry, recover: true })
            .catch(() => undefined);
        }
        if (stop || (infrastructure && exhausted)) throw error;
        if (refused && refusals > MAX_REFUSALS) throw error;
        await delay(refused ? 20 * refusals : 100 * 4 ** (failures - 1), undefined, {
          unref: true,
        });
      }
    }
    throw new TroupeError('TIMEOUT', `activation of ${key} did not complete`);
  }

  /**
   * After a hand-over request whose outcome is unknown (the host did not answer in time): did the
   * host claim the entry, and so take the ask? `host`: it did and is alive, so it answers the
   * asker. `fenced`: it did not, and now never can (its claim is a CAS on `revision`, which has
   * moved on, by our write if need be), so the ask may go elsewhere. Anything else — the host
   * claimed and is gone, or the entry moved past `epoch` — leaves the ask possibly run: the asker
   * gets `UNAVAILABLE` (not retryable) rather than a second run.
   */
  private async settleHandOver(
    addr: ActorAddress,
    revision: number,
    epoch: number,
    target: PlacementTarget,
  ): Promise<'host' | 'fenced'> {
    const key = formatAddress(addr);
    const maybeRun = (why: string) =>
      new TroupeError(
        'UNAVAILABLE',
        `the ask to ${key} handed to host ${target.hostId} may have run (${why}); it is not run again`,
        { retryable: false, details: { handedOver: true, hostId: target.hostId } },
      );
    for (;;) {
      const current = await this.options.directory.get(addr);
      const { entry } = current;
      if (entry.epoch === epoch && entry.hostId === target.hostId) {
        const alive =
          isLiveState(entry.state) && (await this.hostAlive(target.hostId, entry.incarnation));
        if (alive) return 'host';
        throw maybeRun(
          `its activation is ${entry.state}${isLiveState(entry.state) ? ' on a lost host' : ''}`,
        );
      }
      // Another host won the claim at this epoch: ours lost it, with the ask.
      if (entry.epoch === epoch) return 'fenced';
      if (entry.epoch > epoch) throw maybeRun(`the actor moved on to epoch ${entry.epoch}`);
      if (current.revision !== revision) return 'fenced';
      const written = await this.options.directory.compareAndSet(addr, revision, {
        ...entry,
        updatedAtMs: Date.now(),
      });
      if (written !== undefined) return 'fenced';
    }
  }

  private async requestHostActivation(
    hostId: string,
    addr: ActorAddress,
    epoch: number,
    placement: ActivationPlacement,
    ask: ForwardedAsk | undefined,
  ): Promise<void> {
    const { cluster } = this.options.transport;
    const body = encodeJson({ addr, epoch, ...placement, ...(ask ? { ask } : {}) });
    let reply;
    try {
      reply = await this.options.transport.requester.request(
        hostSubject(cluster, hostId, 'activate'),
        body,
        {
          timeoutMs: this.activationTimeoutMs,
          // A host killed or cut off with the request is given up on after a few silent
          // seconds, not the whole activation timeout (chaos: a task waited 14 s for it).
          liveness: {
            silenceMs: ACTIVATION_KEEPALIVE_MS * SILENCE_INTERVALS,
            fromStart: true,
          },
          // Lost on the way (the host's connection moving to another server): sent again.
          resendOnReconnect: true,
          resendEveryMs: ACTIVATION_RESEND_MS,
        },
      );
    } catch (err) {
      if (isNoResponders(err)) throw err;
      // Sent, but no answer: the host may have acted on it.
      throw new TroupeError('UNAVAILABLE', `host ${hostId} did not answer the activation request`, {
        cause: err,
        details: { outcomeUnknown: true },
      });
    }
    if (reply === NO_RESPONDERS) {
      // The host is gone (or not yet listening): a refusal, not a failure of the actor.
      throw new TroupeError('UNAVAILABLE', `host ${hostId} does not answer`, {
        details: { hostRefused: true },
      });
    }
    const error = decodeErrorHeaders(reply.headers);
    if (error) throw error;
  }

  /**
   * Asks the host named by a live entry whether it still holds that activation. Undefined when
   * it cannot tell (no answer, an older host): the entry is then taken as live.
   */
  private async holdsActivation(
    hostId: string,
    incarnation: string | undefined,
    addr: ActorAddress,
    epoch: number,
  ): Promise<boolean | undefined> {
    const local = this.options.localHost;
    if (local?.hostId === hostId) return local.holds?.(addr, epoch);
    try {
      const pong = await this.pingHost(hostId, { holds: { addr, epoch } });
      if (incarnation !== undefined && pong.incarnation !== incarnation) return false;
      return pong.holds;
    } catch (err) {
      this.options.log.debug({ err, hostId }, 'host holds check failed');
      return undefined;
    }
  }

  /** Pings a host (cached briefly); a different incarnation means the old process is gone. */
  async hostAlive(hostId: string, incarnation?: string): Promise<boolean> {
    if (this.options.hostAlive) return this.options.hostAlive(hostId, incarnation);
    const cached = this.alive.get(hostId);
    if (cached && Date.now() - cached.atMs < 2_000) {
      return incarnation === undefined || cached.incarnation === incarnation;
    }
    try {
      const pong = await this.pingHost(hostId, {});
      this.alive.set(hostId, { incarnation: pong.incarnation, atMs: Date.now() });
      return incarnation === undefined || pong.incarnation === incarnation;
    } catch (err) {
      this.alive.delete(hostId);
      if (!isNoResponders(err)) this.options.log.debug({ err, hostId }, 'host ping failed');
      return false;
    }
  }

  /** Pings `hostId` (`host.<id>.ping`, 1 s); throws when it does not answer or answers badly. */
  private async pingHost(hostId: string, request: HostPingRequest): Promise<HostPingReply> {
    const { nc, cluster } = this.options.transport;
    const reply = await nc.request(hostSubject(cluster, hostId, 'ping'), encodeJson(request), {
      timeout: 1_000,
    });
    return HostPingReplySchema.parse(decodeJson(reply.data));
  }

  // ---- wake on post -------------------------------------------------------------------------

  private async startWatcher(): Promise<void> {
    const { jsm } = this.options;
    const { js, cluster } = this.options.transport;
    const stream = inboxStreamName(cluster);
    let info = await jsm.consumers.info(stream, this.consumerName).catch(() => undefined);
    if (info === undefined) {
      try {
        info = await jsm.consumers.add(stream, {
          durable_name: this.consumerName,
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
          filter_subject: inboxSubjectFilter(cluster),
          // Whole messages: one for an activation live in this process is handed to it, which
          // saves its read (see onInboxMessage).
          // Short, so a placer that dies mid-wake hands the message to a standby quickly; a wake
          // that waits for capacity keeps it with working() (see onInboxMessage).
          ack_wait: 10_000_000_000,
          max_ack_pending: this.options.wakeMaxAckPending ?? DEFAULT_WAKE_MAX_ACK_PENDING,
        });
      } catch (err) {
        // Another placer created it first.
        info = await jsm.consumers.info(stream, this.consumerName).catch(() => {
          throw err;
        });
      }
    } else if (info.config.headers_only === true) {
      // Made by an older placer, which read headers only. Changed in place: the consumer keeps
      // its position (a new one would deliver the whole inbox stream again). Left as it is when
      // that fails: the watcher then hints, as it did.
      info = await jsm.consumers
        .update(stream, this.consumerName, { headers_only: false })
        .catch((err: unknown) => {
          this.options.log.warn({ err }, 'inbox watcher left headers-only');
          return info!;
        });
    }
    const consumer = await js.consumers.get(stream, this.consumerName);
    // A callback, not the async iterator: the messages of one socket read are handled in one go,
    // so the acks of a burst of posts to live actors leave in one write. Iterated, each message
    // took its own turn of the microtask queue, and nats.js flushed each ack with a write of its
    // own (a fifth of the process's CPU in a burst of posts went to socket writes).
    this.messages = await consumer.consume({
      max_messages: 512,
      expires: PULL_EXPIRES_MS,
      callback: (m) => void this.onInboxMessage(m),
    });
    const transport = this.options.transport;
    this.maxAckPending = info.config.max_ack_pending ?? DEFAULT_WAKE_MAX_ACK_PENDING;
    this.pushing =
      this.options.localHost !== undefined &&
      transport.localMailHint !== undefined &&
      info.config.headers_only !== true;
    this.updatePushes();
    this.watcherDone = this.messages.closed().then((err) => {
      this.pushing = false;
      this.updatePushes();
      if (err && !this.closed) this.options.log.error({ err }, 'inbox watcher stopped');
    });
  }

  /**
   * Tells this process's posters whether the watcher's hand-over will reach their addressees:
   * while it hands messages over and holds fewer than half the consumer's `max_ack_pending`
   * unsettled. A consumer at that limit (wakes waiting for capacity) delivers nothing more until
   * one settles: a post that counted on its hand-over then would wait for capacity too.
   */
  private updatePushes(): void {
    this.options.transport.watcherPushes =
      this.pushing && !this.closed && this.unsettled < this.maxAckPending / 2;
  }

  /**
   * The delivery epoch of `m`, a message of the watcher's consumer (call for every one, in the
   * order they arrive). It stays the same while deliveries come one after another: each the
   * consumer's next delivery (no gap: none went to another placer or was lost with a connection)
   * and a first delivery (first deliveries come in stream order). An activation may take two
   * pushes of one epoch as consecutive on its inbox (see `InboxReader.pushed`).
   */
  private deliveryEpoch(m: JsMsg): number {
    const delivery = m.info.deliverySequence;
    if (delivery !== this.lastDelivery + 1 || m.redelivered) this.epoch = ++lastEpoch;
    this.lastDelivery = delivery;
    return this.epoch;
  }

  private async onInboxMessage(m: JsMsg): Promise<void> {
    this.unsettled++;
    this.updatePushes();
    try {
      await this.handleInboxMessage(m);
    } finally {
      this.unsettled--;
      this.updatePushes();
    }
  }

  private async handleInboxMessage(m: JsMsg): Promise<void> {
    let keepAlive: NodeJS.Timeout | undefined;
    const epoch = this.deliveryEpoch(m);
    const addr = parseInboxSubject(this.options.transport.cluster, m.subject);
    if (!addr) {
      m.term();
      return;
    }
    try {
      if (this.options.localHost?.isLive?.(addr)) {
        // Live in this process: the directory says so too (a fenced activation stops at once),
        // so the hint goes to it directly, with the message: its read would only cost a round
        // trip per post. Synchronous from the delivery on, so pushes keep the delivery order. A
        // consumer still headers-only (`Nats-Msg-Size`) gives no message to hand over.
        const push = m.headers?.has(MSG_SIZE_HEADER)
          ? undefined
          : {
              msg: { seq: m.seq, data: m.data, ...(m.headers ? { header: m.headers } : {}) },
              epoch,
            };
        if (this.options.transport.localMailHint?.(addr, m.seq, push) !== true) {
          this.hint(addr, m.seq);
        }
        m.ack();
        return;
      }
      const known = this.options.peekDirectory?.(addr) ?? (await this.options.directory.get(addr));
      const { entry } = known;
      if (entry.state === 'STOPPED') {
        m.ack(); // stays in the inbox; delivered if the actor is ever restarted
        return;
      }
      if (entry.state === 'IDLE' || entry.state === 'RUNNING') {
        // Live: the poster's hint may have been lost (or the poster died after publishing).
        this.hint(addr, m.seq);
      } else {
        const jobId = m.headers?.get(Header.JOB);
        keepAlive = setInterval(() => m.working(), 3_000);
        const placed = await this.activate({
          addr,
          deadlineMs: Date.now() + this.activationTimeoutMs,
          known, // saves the placer a second read of the same entry
          pendingSeq: m.seq,
          ...(jobId ? { jobId } : {}),
        });
        // An activation started for this wake reads its inbox until it has this post (it is
        // told its sequence). One found live (started by someone else, or a stale view), or
        // started for another wake of the same actor, gets the hint the poster may have lost.
        if (!placed.started || placed.pendingSeq !== m.seq) this.hint(addr, m.seq);
      }
      m.ack();
    } catch (err) {
      if (toTroupeError(err).retryable === false && toTroupeError(err).code !== 'UNAVAILABLE') {
        m.ack();
      } else {
        m.nak(1_000);
      }
      this.options.log.warn({ err, actor: formatAddress(addr) }, 'wake on post failed');
    } finally {
      clearInterval(keepAlive);
    }
  }

  private hint(addr: ActorAddress, seq: number): void {
    const hint: CoreEnvelope = { t: MAIL_HINT_TYPE, m: { seq } };
    // Batched like tells: a burst of posts to one actor sends its hints together.
    this.options.transport.tells.tell(actorSubject(this.options.transport.cluster, addr), hint);
  }

  // ---- recovery -----------------------------------------------------------------------------

  /**
   * Recovers actors of lost hosts. A live directory entry whose host is gone is put to sleep with
   * `recover` set; an entry with `recover` set (put to sleep here, by a failed activation, or by
   * another placer before a failover) is re-placed while it has unprocessed posts, and loses the
   * flag once a check finds none. Nothing else would wake such an actor: the wake-on-post watcher
   * saw its posts while it was live and only hinted its (lost) host. Runs at start and every
   * `sweepIntervalMs`; a sweep still running when the next is due makes that one a no-op.
   */
  async sweep(): Promise<void> {
    if (this.closed || this.sweeping) return;
    this.sweeping = true;
    try {
      const entries = this.options.sweepCandidates?.() ?? (await this.options.directory.list());
      for (const [key, { entry }] of entries) {
        if (this.closed) return;
        const flagged = entry.state === 'SLEEPING' && entry.recover === true;
        if (!flagged && !(await this.hostLost(entry))) continue;
        const addr = parseActorKey(key);
        if (!addr) continue;
        try {
          await this.recover(addr);
        } catch (err) {
          this.options.log.warn({ err, actor: key }, 'recovery activation failed');
        }
      }
    } catch (err) {
      if (!this.closed) this.options.log.warn({ err }, 'recovery sweep failed');
    } finally {
      this.sweeping = false;
    }
  }

  private async recover(addr: ActorAddress): Promise<void> {
    const pendingSeq = await this.nextPending(addr);
    if (pendingSeq !== undefined) {
      // Puts a live entry of a lost host to sleep (with `recover`) before placing it anew. Found
      // live on a host that is back: hint it, in case the hints for that post were lost.
      const placed = await this.activate({
        addr,
        deadlineMs: Date.now() + this.activationTimeoutMs,
        pendingSeq,
      });
      if (!placed.started || placed.pendingSeq !== pendingSeq) this.hint(addr, pendingSeq);
      return;
    }
    const { entry, revision } = await this.options.directory.get(addr);
    if (await this.hostLost(entry)) {
      // Nothing pending now, but a replica may lag: keep `recover` so the next sweep looks again.
      await this.options.directory.compareAndSet(addr, revision, {
        state: 'SLEEPING',
        epoch: entry.epoch,
        ...jobScopeOf(entry),
        updatedAtMs: Date.now(),
        reason: `host ${entry.hostId ?? '-'} lost`,
        recover: true,
      });
    } else if (
      entry.state === 'SLEEPING' &&
      entry.recover &&
      Date.now() - entry.updatedAtMs >= RECOVER_SETTLE_MS
    ) {
      // Nothing pending, and the flag has stood long enough for any replica to have caught up
      // (a direct get may be answered by one that lags, and miss a post): an ordinary sleeping
      // actor now. A post from here on wakes it as usual (one racing this write makes its
      // activation's claim fail and be retried, never lost).
      await this.options.directory.compareAndSet(addr, revision, {
        ...entry,
        recover: undefined,
        updatedAtMs: Date.now(),
      });
    }
  }

  /** Whether `entry` is live on a host (incarnation) that is gone. */
  private async hostLost(entry: DirectoryEntry): Promise<boolean> {
    return (
      isLiveState(entry.state) &&
      entry.hostId !== undefined &&
      !(await this.hostAlive(entry.hostId, entry.incarnation))
    );
  }

  /** Inbox sequence of the actor's first unprocessed post, if any. */
  private async nextPending(addr: ActorAddress): Promise<number | undefined> {
    const state = await this.options.states.read(addr);
    const next = await this.options.jsm.direct.getMessage(
      inboxStreamName(this.options.transport.cluster),
      {
        next_by_subj: inboxSubject(this.options.transport.cluster, addr),
        seq: (state?.record.cursor ?? 0) + 1,
      },
    );
    return next?.seq;
  }
}

/**
 * How long an actor keeps its `recover` flag with nothing found pending: every sweep until then
 * looks again, since the inbox read that found nothing may have been answered by a replica that
 * had not caught up yet (after a server loss, one can lag for seconds).
 */
export const RECOVER_SETTLE_MS = 10_000;

/** An activate reply, plus whether this placer started the activation (vs. found it live). */
type PlacedReply = ActivateReply & {
  started?: true;
  /** Reply subject of the ask handed to the host, which answers it. */
  answeredBy?: string;
  /** The post sequence the started activation was told of ({@link PlacementRequest.pendingSeq}). */
  pendingSeq?: number;
};

/** Options of {@link LocalPlacer}: a placement service whose only host is this process's. */
export type LocalPlacerOptions = Omit<PlacementServiceOptions, 'selectHost'> & {
  localHost: NonNullable<PlacementServiceOptions['localHost']> & {
    incarnation: string;
    kinds: readonly string[];
  };
};

/**
 * Placement for one process or `troupe dev`: every activation goes to the host in this process.
 * Several processes with local placers on one cluster agree through the directory CAS.
 */
export class LocalPlacer extends PlacementService {
  constructor(options: LocalPlacerOptions) {
    const host = options.localHost;
    super({
      ...options,
      selectHost: async ({ addr }) => {
        if (!host.kinds.includes(addr.kind)) {
          throw new TroupeError(
            'UNAVAILABLE',
            `no host for kind '${addr.kind}' (local placement)`,
            {
              retryable: false,
            },
          );
        }
        return { hostId: host.hostId, incarnation: host.incarnation };
      },
    });
  }
}
