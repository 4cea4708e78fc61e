import {
  coordSubject,
  delay,
  encodeErrorHeaders,
  hostSubject,
  parseWith,
  TroupeError,
  validateHostId,
} from '@troupe/proto';
import {
  DeregisterSchema,
  HeartbeatSchema,
  type HeartbeatReply,
  type HostInfo,
  HostInfoSchema,
  isNoResponders,
  type Logger,
  type RegisterReply,
  REGISTER_TIMEOUT_MS,
  watchConnectionStatus,
  kvKeys,
} from '@troupe/actors';
import { type NatsConnection, type Status, type Subscription } from '@nats-io/transport-node';
import { type KV, KvWatchInclude } from '@nats-io/kv';
import { z } from 'zod';

/** Liveness of a registered host. */
export const HostState = { ALIVE: 'ALIVE', DRAINING: 'DRAINING', DEAD: 'DEAD' } as const;
/** One of {@link HostState}. */
export type HostState = (typeof HostState)[keyof typeof HostState];

/** What the registry knows of a host. */
export interface HostRecord {
  info: HostInfo;
  state: HostState;
  /** Live activations per kind, from the last heartbeat. */
  load: Record<string, number>;
  /** Wall-clock time of the last heartbeat (for display). */
  lastHeartbeatUnixMs: number;
  /** Why it is dead or draining. */
  reason?: string;
}

/** Options of {@link HostRegistry}. */
export interface HostRegistryOptions {
  nc: NatsConnection;
  cluster: string;
  /** KV bucket `troupe_<c>_nodes`: registrations survive a coordinator failover. */
  kv: KV;
  log: Logger;
  /** Heartbeat interval asked of hosts. @default 2000 */
  heartbeatMs?: number;
  /** Missed heartbeats before a host is dead. @default 3 */
  missedHeartbeats?: number;
  /** Called when a host incarnation is declared dead (its actors must be recovered). */
  onHostDead?: (record: HostRecord) => void;
  /** Called when a host registers or its load changes (capacity may have freed up). */
  onCapacityChanged?: () => void;
}

const PersistedSchema = z.object({
  info: HostInfoSchema,
  state: z.enum(HostState),
  reason: z.string().optional(),
  lastHeartbeatUnixMs: z.number(),
});

/**
 * The host registry: hosts register `{hostId, incarnation, kinds, slots, cpu, memMb, backends,
 * labels}` and heartbeat; a host silent for `missedHeartbeats × heartbeatMs` is declared dead, and
 * a heartbeat from a dead incarnation is answered `fenced`. Liveness is judged on this process's
 * monotonic clock, so clock skew between machines does not matter; registrations are persisted
 * so a new leader starts with every host and gives each a full grace period.
 */
export class HostRegistry {
  private readonly hosts = new Map<string, HostRecord & { seenAtMono: number }>();
  private readonly subs: Subscription[] = [];
  private timer?: NodeJS.Timeout;
  private lastSweepMono = now();
  /** When our connection went down (monotonic), while it is down. */
  private disconnectedAtMono?: number;
  private stopWatch?: () => void;
  private stopped = false;
  readonly heartbeatMs: number;
  readonly deadAfterMs: number;
  private readonly sweepEveryMs: number;

  constructor(private readonly options: HostRegistryOptions) {
    this.heartbeatMs = options.heartbeatMs ?? 2_000;
    this.deadAfterMs = this.heartbeatMs * (options.missedHeartbeats ?? 3);
    this.sweepEveryMs = Math.max(100, Math.floor(this.heartbeatMs / 2));
  }

  /** Loads persisted registrations and starts answering register/heartbeat/deregister. */
  async start(): Promise<void> {
    for (const key of await kvKeys(this.options.kv)) {
      const e = await this.options.kv.get(key);
      if (!e || e.operation !== 'PUT') continue;
      const parsed = PersistedSchema.safeParse(e.json());
      if (!parsed.success) continue;
      this.hosts.set(parsed.data.info.hostId, { ...parsed.data, load: {}, seenAtMono: now() });
    }
    const { nc, cluster } = this.options;
    const serve = (verb: string, fn: (data: unknown) => Promise<unknown>) => {
      this.subs.push(
        nc.subscribe(coordSubject(cluster, 'nodes', verb), {
          callback: (err, msg) => {
            if (err) return;
            let body: unknown;
            try {
              body = msg.json();
            } catch {
              body = undefined;
            }
            fn(body).then(
              (reply) => msg.respond(JSON.stringify(reply ?? {})),
              (e: unknown) => msg.respond('', { headers: encodeErrorHeaders(e) }),
            );
          },
        }),
      );
    };
    serve('register', (b) => this.register(parseWith(HostInfoSchema, b, { prefix: 'register' })));
    serve('heartbeat', async (b) =>
      this.heartbeat(parseWith(HeartbeatSchema, b, { prefix: 'heartbeat' })),
    );
    serve('deregister', (b) =>
      this.deregister(parseWith(DeregisterSchema, b, { prefix: 'deregister' })),
    );
    this.stopWatch = watchConnectionStatus(
      nc,
      (status) => this.onConnectionStatus(status),
      this.options.log,
    );
    // A new leader does not know when these hosts last beat: each gets a full grace period from
    // now, when we listen, plus a registration's timeout. A host whose heartbeat went unanswered
    // (to the old leader, or to this process before it subscribed) may be waiting out a
    // registration request that nobody will answer before it asks again; a grace shorter than
    // that declared every live host dead after a leader's own pause (chaos seeds 4021, 4024).
    // Hosts that are gone are still found at once by {@link checkPresence}.
    const loadedSeen = now() + REGISTER_TIMEOUT_MS;
    for (const record of this.hosts.values()) record.seenAtMono = loadedSeen;
    this.lastSweepMono = now();
    this.timer = setInterval(() => this.sweep(), this.sweepEveryMs);
    this.timer.unref();
  }

  /** Stops answering; the registry's state stays in KV for the next leader. */
  stop(): void {
    this.stopped = true;
    this.stopWatch?.();
    clearInterval(this.timer);
    for (const s of this.subs.splice(0)) s.unsubscribe();
  }

  /**
   * Declares dead at once the loaded hosts whose process is gone, instead of after a full grace
   * period (see {@link start}) — after a takeover, the previous leader's own host first of all,
   * whose actors (jobs, tasks) would otherwise wait out `deadAfterMs` more before they are
   * recovered. A process that is gone has no subscription left on NATS: a ping of its host
   * subject answered "no responders" twice, one heartbeat interval apart, with no heartbeat from
   * it in between, is proof enough. A ping answered by another incarnation declares the loaded one
   * dead. A host that answers, or does not answer in time (stopped, slow), keeps its grace
   * period; one cut off from NATS right then is declared dead like a gone one (it is fenced and
   * registers anew when back). Call it once the services that recover dead hosts' actors run.
   */
  async checkPresence(): Promise<void> {
    const loaded = [...this.hosts.values()].filter((r) => r.state !== 'DEAD');
    await Promise.all(loaded.map((r) => this.checkOne(r)));
  }

  private async checkOne(record: HostRecord & { seenAtMono: number }): Promise<void> {
    const { hostId, incarnation } = record.info;
    const seen = record.seenAtMono;
    // Still the record we loaded, not dead, and not heard from since (a heartbeat moves seenAtMono).
    const unchanged = () =>
      !this.stopped &&
      this.hosts.get(hostId) === record &&
      record.state !== 'DEAD' &&
      record.seenAtMono === seen;
    for (let round = 0; round < 2; round++) {
      if (round > 0) await delay(this.heartbeatMs, undefined, { unref: true });
      if (!unchanged()) return;
      const answer = await this.ping(hostId);
      if (!unchanged() || answer === undefined) return;
      if (answer.gone) continue;
      if (answer.incarnation !== incarnation) {
        this.markDead(record, `replaced by incarnation ${answer.incarnation}`);
      }
      return;
    }
    this.markDead(record, 'its process is gone (no subscriber on NATS)');
  }

  /**
   * Who answers `hostId`'s ping: `{gone: true}` when nobody listens, its incarnation when it
   * answers, undefined when that is not known (no answer in time, an unreadable one).
   */
  private async ping(
    hostId: string,
  ): Promise<{ gone: true } | { gone: false; incarnation: string } | undefined> {
    try {
      const reply = await this.options.nc.request(
        hostSubject(this.options.cluster, hostId, 'ping'),
        '{}',
        { timeout: Math.max(1_000, this.heartbeatMs) },
      );
      const incarnation = reply.json<{ incarnation?: unknown } | null>()?.incarnation;
      return typeof incarnation === 'string' ? { gone: false, incarnation } : undefined;
    } catch (err) {
      return isNoResponders(err) ? { gone: true } : undefined;
    }
  }

  /** Registers (or re-registers) a host incarnation. */
  async register(info: HostInfo): Promise<RegisterReply> {
    validateHostId(info.hostId);
    const previous = this.hosts.get(info.hostId);
    if (previous && previous.info.incarnation === info.incarnation && previous.state === 'DEAD') {
      // Its actors were moved when it was declared dead: reviving it would leave its stale
      // activations live beside their new ones (holding slots, answering asks). It must fence
      // them and come back as a new incarnation.
      return {
        heartbeatMs: this.heartbeatMs,
        deadAfterMs: this.deadAfterMs,
        fenced: previous.reason ?? 'declared dead',
      };
    }
    if (previous && previous.info.incarnation !== info.incarnation && previous.state !== 'DEAD') {
      // The same host id came back as a new process: the old incarnation's activations are gone.
      this.markDead(previous, 'replaced by a new incarnation');
    }
    const record = {
      info,
      state: 'ALIVE' as HostState,
      load: {},
      lastHeartbeatUnixMs: Date.now(),
      seenAtMono: now(),
    };
    this.hosts.set(info.hostId, record);
    await this.persist(record);
    this.options.log.info(
      { hostId: info.hostId, kinds: info.kinds, slots: info.slots },
      'host registered',
    );
    this.options.onCapacityChanged?.();
    return { heartbeatMs: this.heartbeatMs, deadAfterMs: this.deadAfterMs };
  }

  private heartbeat(hb: {
    hostId: string;
    incarnation: string;
    load: Record<string, number>;
  }): HeartbeatReply {
    const record = this.hosts.get(hb.hostId);
    if (!record) return { status: 'unknown' };
    if (record.info.incarnation !== hb.incarnation) {
      // A dead record of another incarnation says nothing of this one: a leader that loaded a
      // stale record (the write of the host's last registration lost in a NATS server's loss)
      // declared it dead when the live incarnation answered its ping, and then fenced that live
      // one's every activation at its next heartbeat (chaos seed 8237). It registers instead.
      if (record.state === 'DEAD') return { status: 'unknown' };
      return { status: 'fenced', reason: 'a newer incarnation of this host is registered' };
    }
    if (record.state === 'DEAD')
      return { status: 'fenced', reason: record.reason ?? 'declared dead' };
    record.seenAtMono = now();
    record.lastHeartbeatUnixMs = Date.now();
    const changed = JSON.stringify(record.load) !== JSON.stringify(hb.load);
    record.load = hb.load;
    if (changed) this.options.onCapacityChanged?.();
    return { status: 'ok' };
  }

  private async deregister(d: {
    hostId: string;
    incarnation: string;
  }): Promise<Record<string, never>> {
    const record = this.hosts.get(d.hostId);
    if (record && record.info.incarnation === d.incarnation) {
      this.hosts.delete(d.hostId);
      await this.options.kv.delete(d.hostId).catch(() => undefined);
      this.options.log.info({ hostId: d.hostId }, 'host deregistered');
    }
    return {};
  }

  /**
   * Declares silent hosts dead. Time during which this process itself did not run (a GC pause, a
   * blocked event loop, a suspended VM) is not held against hosts: their heartbeats may be sitting
   * unread in our socket, and Node runs overdue timers before it reads sockets. A sweep that fires
   * late by more than a sweep interval moves every host's last-seen time forward by the lateness
   * and declares nobody dead this time; the next sweep judges with the heartbeats read meanwhile.
   */
  private sweep(): void {
    const t = now();
    if (this.disconnectedAtMono !== undefined) {
      // While our connection is down we hear no host at all: judge nobody (the reconnect shifts
      // last-seen times by the outage, see onConnectionStatus; this is not a stall as well).
      this.lastSweepMono = t;
      return;
    }
    const lateMs = t - this.lastSweepMono - this.sweepEveryMs;
    this.lastSweepMono = t;
    if (lateMs > this.sweepEveryMs) {
      this.forgiveSilence(lateMs);
      this.options.log.warn({ stalledMs: Math.round(lateMs) }, 'coordinator process stalled');
      return;
    }
    for (const record of this.hosts.values()) {
      if (record.state !== 'DEAD' && t - record.seenAtMono > this.deadAfterMs) {
        this.markDead(record, `no heartbeat for ${this.deadAfterMs} ms`);
      }
    }
  }

  /**
   * Time our own connection to NATS was down is not held against hosts either: their heartbeats
   * went to a server we were not on. While it is down nobody is declared dead; when it is back,
   * every host's last-seen time moves forward by the outage (as for a stall, see {@link sweep}).
   */
  private onConnectionStatus(status: Status): void {
    if (status.type === 'disconnect') {
      this.disconnectedAtMono ??= now();
    } else if (status.type === 'reconnect' && this.disconnectedAtMono !== undefined) {
      const outageMs = now() - this.disconnectedAtMono;
      this.disconnectedAtMono = undefined;
      this.forgiveSilence(outageMs);
      this.options.log.warn({ outageMs: Math.round(outageMs) }, 'coordinator reconnected to NATS');
    }
  }

  /** Moves every host's last-seen time forward by `ms`: time we could not hear them. */
  private forgiveSilence(ms: number): void {
    for (const record of this.hosts.values()) record.seenAtMono += ms;
  }

  private markDead(record: HostRecord & { seenAtMono: number }, reason: string): void {
    record.state = 'DEAD';
    record.reason = reason;
    this.options.log.warn({ hostId: record.info.hostId, reason }, 'host declared dead');
    void this.persist(record);
    this.options.onHostDead?.(record);
  }

  private async persist(record: HostRecord): Promise<void> {
    try {
      await this.options.kv.put(
        record.info.hostId,
        JSON.stringify({
          info: record.info,
          state: record.state,
          lastHeartbeatUnixMs: record.lastHeartbeatUnixMs,
          ...(record.reason ? { reason: record.reason } : {}),
        }),
      );
    } catch (err) {
      this.options.log.warn({ err, hostId: record.info.hostId }, 'could not persist host record');
    }
  }

  /** True when `hostId` is registered, not dead, and (if given) runs `incarnation`. */
  isAlive(hostId: string, incarnation?: string): boolean {
    const r = this.hosts.get(hostId);
    if (!r || r.state === 'DEAD') return false;
    return incarnation === undefined || r.info.incarnation === incarnation;
  }

  /** Puts a host in DRAINING: it keeps its activations but receives no new ones. */
  async drain(hostId: string, reason = 'drained by operator'): Promise<HostRecord> {
    const r = this.hosts.get(hostId);
    if (!r) throw new TroupeError('NOT_FOUND', `host ${hostId} is not registered`);
    if (r.state === 'ALIVE') {
      r.state = 'DRAINING';
      r.reason = reason;
      await this.persist(r);
    }
    return r;
  }

  /**
   * Host ids as their persisted registrations change (register, drain, declared dead,
   * deregister), from a watch of the nodes bucket: by the time one arrives here, {@link list}
   * shows the change. Ends when `signal` aborts.
   */
  async *changes(signal: AbortSignal): AsyncGenerator<string> {
    if (signal.aborted) return;
    const watcher = await this.options.kv.watch({ include: KvWatchInclude.UpdatesOnly });
    const stop = () => watcher.stop();
    signal.addEventListener('abort', stop, { once: true });
    try {
      for await (const e of watcher) yield e.key;
    } finally {
      signal.removeEventListener('abort', stop);
      watcher.stop();
    }
  }

  /** Every known host. */
  list(): HostRecord[] {
    return [...this.hosts.values()].map(({ seenAtMono: _s, ...r }) => r);
  }

  /** Hosts that may receive new activations. */
  schedulable(): HostRecord[] {
    return this.list().filter((r) => r.state === 'ALIVE');
  }

  /**
   * The ALIVE hosts' own records, not copies, for the placer's per-activation scan (a copy of
   * every record per placement was most of its cost at 100 hosts). Read them; never keep them.
   */
  *aliveRecords(): Iterable<Readonly<HostRecord>> {
    for (const r of this.hosts.values()) if (r.state === 'ALIVE') yield r;
  }

  /** One host's record. */
  get(hostId: string): HostRecord | undefined {
    const r = this.hosts.get(hostId);
    if (!r) return undefined;
    const { seenAtMono: _s, ...rest } = r;
    return rest;
  }
}

function now(): number {
  return performance.now();
}
