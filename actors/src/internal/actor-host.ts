import {
  type ActorAddress,
  encodeErrorHeaders,
  ErrorReason,
  formatAddress,
  hasReason,
  hostSubject,
  type Logger,
  parseWith,
  toTroupeError,
  TroupeError,
} from '@troupe/proto';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { type Msg, type Subscription } from '@nats-io/transport-node';
import { type JetStreamManager } from '@nats-io/jetstream';
import { type AnyActorDefinition } from '../actor-definition';
import { watchConnectionStatus } from '../connection-status';
import { type Directory } from '../directory';
import { type HostInfo } from '../host-protocol';
import { type RefFactory } from '../ref-factory';
import { type StateStore } from '../state-store';
import { Activation, type ActivationHost } from './activation';
import { ACTIVATION_KEEPALIVE_MS } from './ask-keepalive';
import { type RegistrarHost } from './host-registrar';
import { encodeJson } from './json-codec';
import {
  type ActivationPlacement,
  HostActivateRequestSchema,
  HostDeactivateRequestSchema,
  HostPingRequestSchema,
} from './protocol';
import { type Transport } from './transport';

/** How long a host request watched for signs of life may be kept alive by them at most. */
const SIGNS_OF_LIFE_FOR_MS = 120_000;

/**
 * After the connection comes back, every activation reads its inbox now and again this much later.
 * Mail hints are core NATS: those sent while the connection was away are lost, and in a cluster
 * the other servers learn of our resubscribed interest a moment after the reconnect, so a hint
 * published there just after it can be lost too.
 */
const REREAD_AFTER_RECONNECT_MS = 1_000;

/** Options of the host side of an actor system. */
export interface ActorHostOptions {
  transport: Transport;
  jsm: JetStreamManager;
  directory: Directory;
  states: StateStore;
  hostId: string;
  incarnation: string;
  log: Logger;
  definitions: readonly AnyActorDefinition[];
  /** Max live activations per kind; beyond it activation is refused with UNAVAILABLE. */
  slots: Record<string, number>;
  /** What the host advertises to the coordinator (defaults: this machine's cores and memory). */
  hostInfo?: Partial<Pick<HostInfo, 'cpu' | 'memMb' | 'backends' | 'labels'>>;
  refsFor(sender: ActorAddress): RefFactory;
}

/**
 * Hosts activations of the kinds it was given: answers `host.<id>.activate|deactivate|ping|stats`
 * from placers, enforces per-kind capacity, and drains everything on shutdown.
 */
export class ActorHost implements ActivationHost, RegistrarHost {
  readonly transport: Transport;
  readonly jsm: JetStreamManager;
  readonly directory: Directory;
  readonly states: StateStore;
  readonly hostId: string;
  /** Changes when the coordinator fences this host and it registers again. */
  incarnation: string;
  readonly log: Logger;
  private readonly defs = new Map<string, AnyActorDefinition>();
  private readonly live = new Map<string, Activation>();
  private readonly starting = new Map<string, Promise<Activation>>();
  private readonly subs: Subscription[] = [];
  private closing = false;
  private stopWatch?: () => void;
  activationsStarted = 0;

  constructor(private readonly options: ActorHostOptions) {
    this.transport = options.transport;
    this.jsm = options.jsm;
    this.directory = options.directory;
    this.states = options.states;
    this.hostId = options.hostId;
    this.incarnation = options.incarnation;
    this.log = options.log;
    for (const d of options.definitions) this.defs.set(d.kind, d);
    this.transport.liveHere = (addr) => this.isLive(addr);
    this.transport.localMailHint = (addr, seq, push) =>
      this.live.get(formatAddress(addr))?.mailHinted(seq, push) === true;
  }

  /** Kinds this host can activate. */
  get kinds(): string[] {
    return [...this.defs.keys()];
  }

  /** Number of live activations. */
  get activationCount(): number {
    return this.live.size;
  }

  /** Activations per kind that hold a slot (not yet releasing their entry). */
  countByKind(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const a of this.live.values()) {
      if (a.holdsSlot) out[a.address.kind] = (out[a.address.kind] ?? 0) + 1;
    }
    return out;
  }

  /** Registration record for the coordinator. */
  info(): HostInfo {
    return {
      hostId: this.hostId,
      incarnation: this.incarnation,
      kinds: this.kinds,
      slots: this.options.slots,
      cpu: this.options.hostInfo?.cpu ?? os.availableParallelism(),
      memMb: this.options.hostInfo?.memMb ?? Math.round(os.totalmem() / 1024 / 1024),
      backends: this.options.hostInfo?.backends ?? [],
      labels: this.options.hostInfo?.labels ?? {},
    };
  }

  /** Live activations per kind, for heartbeats. */
  load(): Record<string, number> {
    return this.countByKind();
  }

  /**
   * The coordinator declared this incarnation dead and moved its actors: fence every activation
   * (no write of theirs can land anyway) and continue as a new incarnation.
   */
  fenceAll(reason: string): void {
    this.log.warn({ reason, activations: this.live.size }, 'fencing all activations');
    for (const a of [...this.live.values()]) a.fence();
    this.incarnation = randomBytes(8).toString('hex');
  }

  /**
   * Passivates the local activation with this key, if any; with `epoch`, only the activation of
   * that epoch (a caller that read the epoch earlier must not stop a newer one started since).
   */
  async deactivateLocal(key: string, epoch?: number): Promise<void> {
    const a = this.live.get(key);
    if (epoch !== undefined && a?.epoch !== epoch) return;
    await a?.stop('deactivated');
  }

  refsFor(sender: ActorAddress): RefFactory {
    return this.options.refsFor(sender);
  }

  /**
   * Tells every live activation to read its inbox, as if hinted: used after a reconnect, when
   * hints may have been lost.
   */
  rereadInboxes(): void {
    for (const a of this.live.values()) a.mailHinted(undefined);
  }

  /**
   * Waits for the server to have processed the host-control subscriptions and fails when it
   * refused one: a NATS account whose permissions do not cover this host id's control subjects
   * (each node agent's own user, deploy/compose/nats.conf) must not run as that host.
   * @throws TroupeError `PERMISSION_DENIED` naming the subject
   */
  async checkSubscriptions(): Promise<void> {
    await this.transport.nc.flush();
    const refused = this.subs.find((s) => s.isClosed());
    if (refused) {
      throw new TroupeError(
        'PERMISSION_DENIED',
        `host ${this.hostId}: the NATS account may not subscribe to ${refused.getSubject()}`,
      );
    }
  }

  /** Starts answering host-control requests. */
  listen(): void {
    const { nc, cluster } = this.transport;
    this.stopWatch = watchConnectionStatus(
      nc,
      (status) => {
        if (status.type !== 'reconnect' || this.closing) return;
        this.log.info({ activations: this.live.size }, 'reconnected: rereading inboxes');
        this.rereadInboxes();
        setTimeout(() => {
          if (!this.closing) this.rereadInboxes();
        }, REREAD_AFTER_RECONNECT_MS).unref();
      },
      this.log,
    );

    const on = (
      verb: Parameters<typeof hostSubject>[2],
      fn: (msg: Msg) => Promise<unknown>,
      signsOfLifeMs?: number,
    ) => {
      this.subs.push(
        nc.subscribe(hostSubject(cluster, this.hostId, verb), {
          callback: (err, msg) => {
            if (err) return;
            // Signs of life until the answer, for a requester that watches for them.
            const answer =
              signsOfLifeMs === undefined
                ? msg
                : this.transport.keepalive.track(
                    msg,
                    Date.now() + SIGNS_OF_LIFE_FOR_MS,
                    false,
                    signsOfLifeMs,
                  );
            fn(msg).then(
              (reply) => answer.respond(encodeJson(reply ?? {})),
              (e: unknown) => answer.respond(new Uint8Array(), { headers: encodeErrorHeaders(e) }),
            );
          },
        }),
      );
    };
    on(
      'activate',
      async (msg) => {
        const req = parseWith(HostActivateRequestSchema, msg.json(), { prefix: 'activate' });
        const a = await this.activate(req.addr, req.epoch, {
          ...(req.revision ? { directoryRevision: req.revision } : {}),
          ...(req.claimRevision !== undefined ? { claimRevision: req.claimRevision } : {}),
          ...(req.ask ? { withAsk: true } : {}),
          ...(req.jobId ? { jobId: req.jobId } : {}),
          ...(req.pendingSeq !== undefined ? { pendingSeq: req.pendingSeq } : {}),
        });
        // From here on this host owns the answer to a handed-over ask (even if the activation
        // stops before running it: then the asker is told the actor moved, and retries).
        if (req.ask) a.acceptForwardedAsk(req.ask);
        return { hostId: this.hostId, epoch: a.epoch };
      },
      ACTIVATION_KEEPALIVE_MS,
    );
    on('deactivate', async (msg) => {
      const req = parseWith(HostDeactivateRequestSchema, msg.json(), { prefix: 'deactivate' });
      await this.live.get(formatAddress(req.addr))?.stop('deactivated');
      return {};
    });
    on('ping', async (msg) => {
      const req = parseWith(HostPingRequestSchema, msg.data.length ? msg.json() : {}, {
        prefix: 'ping',
      });
      return {
        hostId: this.hostId,
        incarnation: this.incarnation,
        activations: this.live.size,
        ...(req.holds ? { holds: this.holds(req.holds.addr, req.holds.epoch) } : {}),
      };
    });
    on('stats', async () => ({
      hostId: this.hostId,
      incarnation: this.incarnation,
      activations: this.live.size,
      byKind: this.countByKind(),
      activationsStarted: this.activationsStarted,
    }));
  }

  /**
   * Activates `addr` at `epoch` on this host. Idempotent for the same epoch; an older local
   * activation of the same actor is fenced first.
   */
  async activate(
    addr: ActorAddress,
    epoch: number,
    placement: ActivationPlacement = {},
  ): Promise<Activation> {
    if (this.closing) throw hostRefused(`host ${this.hostId} is shutting down`);
    const def = this.defs.get(addr.kind);
    if (!def) throw hostRefused(`host ${this.hostId} does not host kind '${addr.kind}'`);
    const key = formatAddress(addr);
    const existing = this.live.get(key);
    // The same request again (a placer's copy of one it did not hear about): the same
    // activation, answered once it has started — not before, while its `onActivate` runs.
    if (existing && existing.epoch === epoch) return this.starting.get(key) ?? existing;
    if (existing && existing.epoch > epoch) {
      throw new TroupeError(
        'UNAVAILABLE',
        `stale activation request for ${key} (epoch ${epoch} < ${existing.epoch})`,
        {
          retryable: false,
        },
      );
    }
    existing?.fence();
    const inFlight = this.starting.get(key);
    if (inFlight) return inFlight;
    const limit = this.options.slots[addr.kind];
    if (limit !== undefined && (this.countByKind()[addr.kind] ?? 0) >= limit) {
      throw hostRefused(`host ${this.hostId} has no free ${addr.kind} slot (${limit})`);
    }
    const activation = new Activation(def, addr.id, epoch, this, placement);
    const start = (async () => {
      this.live.set(key, activation);
      try {
        await activation.start();
        this.activationsStarted++;
        return activation;
      } catch (err) {
        activation.fence();
        if (this.live.get(key) === activation) this.live.delete(key);
        if (hasReason(err, ErrorReason.FENCED)) throw err;
        throw toTroupeError(err);
      } finally {
        this.starting.delete(key);
      }
    })();
    this.starting.set(key, start);
    return start;
  }

  /**
   * True when this host has an activation of `addr` at `epoch` that has not ended (starting,
   * running or passivating). False while the directory names this host for it means the entry
   * is stale: the activation ended and could not release it.
   */
  holds(addr: ActorAddress, epoch: number): boolean {
    return this.live.get(formatAddress(addr))?.epoch === epoch;
  }

  /** True when `addr` has a started activation here that takes messages (not stopping). */
  isLive(addr: ActorAddress): boolean {
    return this.live.get(formatAddress(addr))?.accepting === true;
  }

  onEnded(activation: Activation): void {
    const key = formatAddress(activation.address);
    if (this.live.get(key) === activation) this.live.delete(key);
  }

  /**
   * Graceful shutdown: stop answering, let running turns finish for up to `graceMs`, commit and
   * release every directory entry, then abort what is left.
   */
  async shutdown(graceMs: number): Promise<void> {
    this.closing = true;
    this.stopWatch?.();
    // Drain, not unsubscribe: an activation request the server routed here before it saw the UNSUB
    // is refused (`hostRefused`: the placer goes elsewhere at once) instead of dropped, which left
    // the placer waiting for a resend and then the host's silence.
    for (const s of this.subs.splice(0)) void s.drain().catch(() => undefined);
    await Promise.allSettled([...this.starting.values()]);
    const all = [...this.live.values()];
    const stopped = Promise.allSettled(all.map((a) => a.stop('shutdown')));
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<'timeout'>((r) => {
      timer = setTimeout(() => r('timeout'), graceMs);
    });
    const outcome = await Promise.race([stopped.then(() => 'done' as const), grace]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      const reason = new TroupeError('CANCELLED', 'host shutting down', {
        details: { reason: 'shutdown' },
      });
      for (const a of this.live.values()) a.abortTurn(reason);
      await stopped;
    }
  }
}

/**
 * The host cannot take this activation (shutting down, full, wrong kind); the actor itself is
 * fine, so the placer tries again, elsewhere, without counting it towards STOPPED.
 */
function hostRefused(message: string): TroupeError {
  return new TroupeError('UNAVAILABLE', message, { details: { hostRefused: true } });
}
