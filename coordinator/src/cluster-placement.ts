import {
  type ActorAddress,
  directoryKey,
  ErrorReason,
  formatAddress,
  parseActorKey,
  TroupeError,
} from '@troupe/proto';
import {
  type DirectoryEntry,
  DirectoryEntrySchema,
  isLiveState,
  type Logger,
  placerStoppedError,
  type PlacementRequest,
  type PlacementTarget,
  type VersionedEntry,
} from '@troupe/actors';
import { type KV, type KvWatchEntry } from '@nats-io/kv';
import { DEFAULT_JOB_POLICY, FairQueue, type JobPolicy } from './fair-queue';
import { type HostRecord, type HostRegistry } from './host-registry';
import { Occupancy } from './internal/occupancy';

/** Options of {@link ClusterPlacement}. */
export interface ClusterPlacementOptions {
  registry: HostRegistry;
  /** The directory bucket, watched to know which host runs what. */
  directoryKv: KV;
  log: Logger;
  /** Scheduling policy of a job (weight, priority, max activations). */
  jobPolicy?: (jobId: string) => JobPolicy;
  /** Max live activations per kind across the cluster. @default unlimited */
  kindLimits?: Record<string, number>;
  /** Sleeping actors whose entry {@link ClusterPlacement.peek} keeps. @default 20000 */
  maxSleepingViews?: number;
  /** Told of every watched entry (undefined: deleted), e.g. the {@link ActorReaper}'s. */
  onEntry?: (key: string, entry: DirectoryEntry | undefined) => void;
}

interface Waiter {
  request: PlacementRequest;
  resolve: (t: PlacementTarget) => void;
  reject: (e: unknown) => void;
  timer: NodeJS.Timeout;
}

const NO_JOB = '';
/** Sleeping actors whose directory entry {@link ClusterPlacement.peek} can answer from memory. */
export const MAX_SLEEPING_VIEWS = 20_000;

/**
 * Cluster placement: picks a host that hosts the kind, carries the requested labels, is alive and
 * not draining, and has a free slot — the actor's `near` host first (affinity), else the least
 * loaded. When every fitting host is full the request waits in a weighted fair queue across jobs
 * until a slot frees or its deadline passes. Load is counted from a watch of the directory (the
 * truth of what runs where) plus placements in flight.
 */
export class ClusterPlacement {
  private readonly occupancy = new Occupancy();
  /**
   * Last watched entry of the actors that are SLEEPING (what {@link peek} answers from), the
   * most recently written {@link MAX_SLEEPING_VIEWS}: every actor a cluster ever ran sleeps
   * forever, and keeping them all grew the coordinator by ~0.4 KB per actor (the long soak).
   */
  private readonly sleeping = new Map<string, VersionedEntry>();
  /** Keys whose watched value is neither SLEEPING nor live (STOPPED, unreadable): never peeked. */
  private readonly unusual = new Set<string>();
  /** Watched entries the recovery sweep looks at: live, or SLEEPING with `recover` set. */
  private readonly sweepable = new Map<string, VersionedEntry>();
  private readonly queues = new Map<string, FairQueue<Waiter>>();
  private watchStop?: () => void;
  /** Set by {@link stop}: no request waits any more. */
  private stopped = false;
  private readonly jobPolicy: (jobId: string) => JobPolicy;
  /** Placements made (metrics). */
  placements = 0;

  constructor(private readonly options: ClusterPlacementOptions) {
    this.jobPolicy = options.jobPolicy ?? (() => DEFAULT_JOB_POLICY);
  }

  /** Starts watching the directory; resolves once the current entries are loaded. */
  async start(): Promise<void> {
    const watcher = await this.options.directoryKv.watch({ key: '>' });
    let initialDone: () => void = () => undefined;
    const initial = new Promise<void>((r) => (initialDone = r));
    this.watchStop = () => watcher.stop();
    void (async () => {
      for await (const e of watcher) {
        this.onDirectoryEntry(e);
        if (e.delta === 0) initialDone();
      }
    })().catch((err: unknown) => this.options.log.error({ err }, 'directory watch stopped'));
    // An empty bucket yields no entry at all: don't wait for one.
    const status = await this.options.directoryKv.status();
    if (status.values === 0) initialDone();
    await initial;
  }

  /** Stops watching and fails every waiting request, and every later one, with UNAVAILABLE. */
  stop(): void {
    this.stopped = true;
    this.watchStop?.();
    for (const q of this.queues.values()) {
      let w: Waiter | undefined;
      while ((w = q.admitNext(() => true))) {
        clearTimeout(w.timer);
        w.reject(placerStoppedError(`${formatAddress(w.request.addr)} (coordinator stopping)`));
      }
    }
  }

  private onDirectoryEntry(e: KvWatchEntry): void {
    const addr = parseActorKey(e.key);
    if (!addr) return;
    const key = e.key;
    let entry: DirectoryEntry | undefined;
    if (e.operation === 'PUT' && e.value.length > 0) {
      const parsed = DirectoryEntrySchema.safeParse(e.json());
      if (parsed.success) entry = parsed.data;
    }
    const deleted = e.operation !== 'PUT' || e.value.length === 0;
    this.options.onEntry?.(key, entry);
    this.sleeping.delete(key);
    if (entry?.state === 'SLEEPING') {
      this.sleeping.set(key, { entry, revision: e.revision });
      if (this.sleeping.size > (this.options.maxSleepingViews ?? MAX_SLEEPING_VIEWS)) {
        // The oldest view goes; peek then guesses "never seen" for it, which the host's claim
        // refuses (raced) and the placer reads the KV: one wasted round trip, never a wrong
        // activation.
        const oldest = this.sleeping.keys().next().value;
        if (oldest !== undefined) this.sleeping.delete(oldest);
      }
    }
    if (entry && (isLiveState(entry.state) || (entry.state === 'SLEEPING' && entry.recover))) {
      this.sweepable.set(key, { entry, revision: e.revision });
    } else {
      this.sweepable.delete(key);
    }
    if (!deleted && !(entry && (entry.state === 'SLEEPING' || isLiveState(entry.state)))) {
      this.unusual.add(key);
    } else {
      this.unusual.delete(key);
    }
    if (entry && isLiveState(entry.state) && entry.hostId) {
      this.occupancy.setLive(key, {
        hostId: entry.hostId,
        kind: addr.kind,
        ...(entry.jobId ? { jobId: entry.jobId } : {}),
      });
    } else if (this.occupancy.clearLive(key) || this.occupancy.settlePending(key, e.revision)) {
      this.kick(addr.kind);
    }
  }

  /**
   * Drops what the watch showed of an actor whose entry was removed without a marker (a retired
   * actor, `retireActor` of `@troupe/actors`): the watch is not told of such a removal.
   */
  forget = (key: string): void => {
    if (this.occupancy.get(key)) return; // live again: the watch is the truth
    this.sleeping.delete(key);
    this.unusual.delete(key);
    this.sweepable.delete(key);
  };

  /**
   * The entries the placer's recovery sweep looks at, from the watch (a copy): live ones and
   * SLEEPING ones with `recover` set. What a listing of the directory would give the sweep, at no
   * cost per sleeping actor.
   */
  sweepCandidates = (): Map<string, VersionedEntry> => new Map(this.sweepable);

  /**
   * The watched directory entry of `addr` when it is not live, for the placer's first decision
   * (saves a KV read per activation): SLEEPING at its revision, or absent (revision 0) when the
   * watch has never seen it live, stopped or sleeping. Undefined for anything else: the placer
   * reads the KV. A stale answer is safe: the host claims the entry by CAS on that revision.
   */
  peek = (addr: ActorAddress): VersionedEntry | undefined => {
    const key = directoryKey(addr);
    const sleeping = this.sleeping.get(key);
    if (sleeping) return sleeping;
    if (this.occupancy.get(key) || this.unusual.has(key)) return undefined;
    return { entry: { state: 'SLEEPING', epoch: 0, updatedAtMs: 0 }, revision: 0 };
  };

  /** Live + in-flight activations of `kind` on `hostId`. */
  used(hostId: string, kind: string): number {
    return this.occupancy.used(hostId, kind);
  }

  /** Live activations per job (for metrics and limits). */
  liveByJob(): Record<string, number> {
    return this.occupancy.liveByJob();
  }

  /** Requests waiting for capacity, per kind. */
  queueDepth(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [kind, q] of this.queues) out[kind] = q.size;
    return out;
  }

  /** The {@link HostSelector} for the placement service. */
  select = (request: PlacementRequest): Promise<PlacementTarget> => {
    if (this.stopped) {
      // A placement in flight on a coordinator that stepped down: its asker asks the next leader.
      return Promise.reject(
        placerStoppedError(`${formatAddress(request.addr)} (coordinator stopping)`),
      );
    }
    const kind = request.addr.kind;
    const hosts = this.options.registry
      .list()
      .filter((h) => h.state !== 'DEAD' && h.info.kinds.includes(kind));
    if (hosts.length === 0) {
      return Promise.reject(
        new TroupeError('UNAVAILABLE', `no live host hosts kind '${kind}'`, {
          details: { kind },
          reason: ErrorReason.NO_HOST,
        }),
      );
    }
    const queue = this.queueFor(kind);
    if (queue.size === 0) {
      const target = this.tryPlace(request);
      if (target) return Promise.resolve(target);
    }
    return new Promise<PlacementTarget>((resolve, reject) => {
      const jobId = request.jobId ?? NO_JOB;
      const waiter: Waiter = {
        request,
        resolve,
        reject,
        timer: setTimeout(
          () => {
            if (queue.remove(jobId, waiter)) {
              reject(
                new TroupeError('UNAVAILABLE', `no free ${kind} slot before the deadline`, {
                  details: { kind, queued: queue.size },
                }),
              );
            }
          },
          Math.max(0, request.deadlineMs - Date.now()),
        ),
      };
      waiter.timer.unref();
      queue.push(jobId, waiter);
      this.kick(kind);
    });
  };

  /** Releases the in-flight count of a placement that did not happen. */
  placementFailed = (request: PlacementRequest, target: PlacementTarget): void => {
    const key = directoryKey(request.addr);
    this.occupancy.clearPending(key, target.hostId);
    this.kick(request.addr.kind);
  };

  /** Capacity may have changed (host registered, load changed): admit what fits. */
  kickAll(): void {
    for (const kind of this.queues.keys()) this.kick(kind);
  }

  private kick(kind: string): void {
    const queue = this.queues.get(kind);
    if (!queue || queue.size === 0) return;
    let admitted: PlacementTarget | undefined;
    for (;;) {
      const w = queue.admitNext(
        (waiter) => (admitted = this.tryPlace(waiter.request)) !== undefined,
        (jobId) => this.jobHasRoom(jobId),
      );
      if (!w || !admitted) return;
      clearTimeout(w.timer);
      w.resolve(admitted);
    }
  }

  private queueFor(kind: string): FairQueue<Waiter> {
    let q = this.queues.get(kind);
    if (!q) {
      q = new FairQueue<Waiter>((jobId) =>
        jobId === NO_JOB ? DEFAULT_JOB_POLICY : this.jobPolicy(jobId),
      );
      this.queues.set(kind, q);
    }
    return q;
  }

  private jobHasRoom(jobId: string): boolean {
    if (jobId === NO_JOB) return true;
    const limit = this.jobPolicy(jobId).maxActivations;
    return limit === undefined || this.occupancy.usedByJob(jobId) < limit;
  }

  private tryPlace(request: PlacementRequest): PlacementTarget | undefined {
    const kind = request.addr.kind;
    if (request.jobId && !this.jobHasRoom(request.jobId)) return undefined;
    const kindLimit = this.options.kindLimits?.[kind];
    if (kindLimit !== undefined && this.occupancy.usedByKind(kind) >= kindLimit) return undefined;
    // One pass over the hosts, no copies: the host of `near` when it fits, else the least loaded
    // (load ratio, then fewest activations; the first in registry order on a tie).
    const nearHost = request.near ? this.hostOf(request.near) : undefined;
    let chosen: Fit | undefined;
    for (const h of this.options.registry.aliveRecords()) {
      if (!h.info.kinds.includes(kind) || !labelsMatch(h, request.labels)) continue;
      const c: Fit = { h, used: this.used(h.info.hostId, kind), slots: h.info.slots[kind] };
      if (c.slots !== undefined && c.used >= c.slots) continue;
      if (nearHost !== undefined && h.info.hostId === nearHost) {
        chosen = c;
        break;
      }
      if (!chosen || isLessLoaded(c, chosen)) chosen = c;
    }
    if (!chosen) return undefined;
    const key = directoryKey(request.addr);
    this.occupancy.setPending(key, {
      hostId: chosen.h.info.hostId,
      kind,
      ...(request.jobId ? { jobId: request.jobId } : {}),
      ...(request.directoryRevision !== undefined ? { basedOn: request.directoryRevision } : {}),
    });
    this.placements++;
    return { hostId: chosen.h.info.hostId, incarnation: chosen.h.info.incarnation };
  }

  private hostOf(addr: ActorAddress): string | undefined {
    const o = this.occupancy.get(directoryKey(addr));
    return o?.source === 'live' ? o.hostId : undefined;
  }
}

function labelsMatch(h: HostRecord, wanted: Record<string, string> | undefined): boolean {
  if (!wanted) return true;
  return Object.entries(wanted).every(([k, v]) => h.info.labels[k] === v);
}

/** A host that can take the activation, with its occupancy for `kind`. */
interface Fit {
  h: Readonly<HostRecord>;
  used: number;
  slots: number | undefined;
}

function isLessLoaded(a: Fit, b: Fit): boolean {
  const byRatio = loadRatio(a) - loadRatio(b);
  return byRatio < 0 || (byRatio === 0 && a.used < b.used);
}

function loadRatio(c: { used: number; slots: number | undefined }): number {
  return c.slots === undefined ? c.used / 1_000_000 : c.used / Math.max(1, c.slots);
}
