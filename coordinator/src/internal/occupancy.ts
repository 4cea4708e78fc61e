/** Who occupies a slot: a live activation (from the directory) or a placement in flight. */
export interface Occupant {
  hostId: string;
  kind: string;
  jobId?: string;
  source: 'live' | 'pending';
  /** Of a pending placement: the directory revision of the entry it was decided on. */
  basedOn?: number;
}

/**
 * Slot accounting for placement: one occupant per actor key, with counters per host and kind,
 * per kind and per job kept up to date on every change, so a placement decision costs O(hosts),
 * not O(live actors).
 */
export class Occupancy {
  private readonly byKey = new Map<string, Occupant>();
  private readonly hostKind = new Map<string, number>();
  private readonly kinds = new Map<string, number>();
  private readonly jobs = new Map<string, number>();

  /** The occupant of `key`, if any. */
  get(key: string): Occupant | undefined {
    return this.byKey.get(key);
  }

  /** Records a live activation (replacing a pending placement of the same key). */
  setLive(key: string, o: Omit<Occupant, 'source'>): void {
    this.replace(key, { ...o, source: 'live' });
  }

  /** Records a placement in flight, unless the key is already live. */
  setPending(key: string, o: Omit<Occupant, 'source'>): void {
    if (this.byKey.get(key)?.source === 'live') return;
    this.replace(key, { ...o, source: 'pending' });
  }

  /** The key is no longer live; a pending placement of it stays. Returns true if a slot freed. */
  clearLive(key: string): boolean {
    const cur = this.byKey.get(key);
    if (!cur || cur.source !== 'live') return false;
    this.replace(key, undefined);
    return true;
  }

  /**
   * The entry of `key` was written at `revision` and is not live: a pending placement decided on
   * an earlier revision has come and gone (the watch may never show its live entry: with one
   * value kept per key, a short activation's IDLE is replaced by SLEEPING before the watch reads
   * it) or lost its claim. Clears it; returns true if a slot freed.
   */
  settlePending(key: string, revision: number): boolean {
    const cur = this.byKey.get(key);
    if (!cur || cur.source !== 'pending' || (cur.basedOn ?? Infinity) >= revision) return false;
    this.replace(key, undefined);
    return true;
  }

  /** A placement of `key` on `hostId` did not happen. */
  clearPending(key: string, hostId: string): void {
    const cur = this.byKey.get(key);
    if (cur && cur.source === 'pending' && cur.hostId === hostId) this.replace(key, undefined);
  }

  /** Occupied slots of `kind` on `hostId`. */
  used(hostId: string, kind: string): number {
    return this.hostKind.get(`${hostId}\u0000${kind}`) ?? 0;
  }

  /** Occupied slots of `kind` in the cluster. */
  usedByKind(kind: string): number {
    return this.kinds.get(kind) ?? 0;
  }

  /** Occupied slots of a job. */
  usedByJob(jobId: string): number {
    return this.jobs.get(jobId) ?? 0;
  }

  /** Live (not pending) occupants per job. */
  liveByJob(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const o of this.byKey.values()) {
      if (o.source === 'live' && o.jobId) out[o.jobId] = (out[o.jobId] ?? 0) + 1;
    }
    return out;
  }

  private replace(key: string, next: Occupant | undefined): void {
    const prev = this.byKey.get(key);
    if (prev) this.count(prev, -1);
    if (next) {
      this.byKey.set(key, next);
      this.count(next, 1);
    } else {
      this.byKey.delete(key);
    }
  }

  private count(o: Occupant, delta: number): void {
    bump(this.hostKind, `${o.hostId}\u0000${o.kind}`, delta);
    bump(this.kinds, o.kind, delta);
    if (o.jobId) bump(this.jobs, o.jobId, delta);
  }
}

function bump(m: Map<string, number>, k: string, delta: number): void {
  const v = (m.get(k) ?? 0) + delta;
  if (v === 0) m.delete(k);
  else m.set(k, v);
}
