import { type KV } from '@nats-io/kv';
import { type Logger } from '@troupe/actors';

/** Options of {@link LeaderLease}. */
export interface LeaderLeaseOptions {
  kv: KV;
  /** Who we are (shown in the lease). */
  holderId: string;
  log: Logger;
  /** A lease not renewed for this long may be taken over. @default 5000 */
  leaseMs?: number;
  /** Renewal (and standby check) interval. @default 1000 */
  renewMs?: number;
  onElected: () => Promise<void> | void;
  onDeposed: () => Promise<void> | void;
}

const KEY = 'coordinator';

/**
 * Leader election with a KV lease. The leader renews the lease by compare-and-set every
 * `renewMs`; a standby watches the lease's *revision* and takes over by compare-and-set when it
 * has not changed for `leaseMs` on the standby's own monotonic clock — no wall clocks are
 * compared across machines. A leader whose renewal fails (someone else's revision) steps down at
 * once; one that cannot reach NATS for `leaseMs` steps down too, before a standby can take over.
 */
export class LeaderLease {
  private timer?: NodeJS.Timeout;
  private leading = false;
  private lastRevision = -1;
  private lastChangeMono = 0;
  private lastRenewMono = 0;
  private stopped = false;
  private readonly leaseMs: number;
  private readonly renewMs: number;
  private busy?: Promise<void>;

  constructor(private readonly options: LeaderLeaseOptions) {
    this.leaseMs = options.leaseMs ?? 5_000;
    this.renewMs = options.renewMs ?? 1_000;
  }

  /** True while this process leads. */
  get isLeader(): boolean {
    return this.leading;
  }

  /** Starts competing for the lease. */
  async start(): Promise<void> {
    await this.tick();
    this.timer = setInterval(() => {
      // Step down on our own clock even when a tick hangs on an unreachable server, so we never
      // lead past the point where a standby may take over.
      if (this.leading && performance.now() - this.lastRenewMono >= this.leaseMs * 0.8) {
        void this.setLeading(false);
      }
      if (!this.busy) this.busy = this.tick().finally(() => (this.busy = undefined));
    }, this.renewMs);
    this.timer.unref();
  }

  /** Stops competing; a leader releases the lease so a standby takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.busy;
    if (this.leading) {
      await this.setLeading(false);
      try {
        const e = await this.options.kv.get(KEY);
        if (
          e &&
          e.operation === 'PUT' &&
          e.json<{ holder: string }>().holder === this.options.holderId
        ) {
          await this.options.kv.delete(KEY, { previousSeq: e.revision });
        }
      } catch (err) {
        this.options.log.debug({ err }, 'could not release the lease');
      }
    }
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    const t = performance.now();
    try {
      const e = await this.options.kv.get(KEY);
      const body = JSON.stringify({ holder: this.options.holderId, renewedAtUnixMs: Date.now() });
      if (!e || e.operation !== 'PUT') {
        await this.options.kv.create(KEY, body);
        this.lastRenewMono = t;
        await this.setLeading(true);
        return;
      }
      const holder = e.json<{ holder: string }>().holder;
      if (e.revision !== this.lastRevision) {
        this.lastRevision = e.revision;
        this.lastChangeMono = t;
      }
      if (holder === this.options.holderId) {
        this.lastRevision = await this.options.kv.update(KEY, body, e.revision);
        this.lastChangeMono = t;
        this.lastRenewMono = t;
        await this.setLeading(true);
        return;
      }
      if (this.leading) await this.setLeading(false); // someone else holds it
      if (t - this.lastChangeMono >= this.leaseMs) {
        this.lastRevision = await this.options.kv.update(KEY, body, e.revision);
        this.lastRenewMono = t;
        this.options.log.warn({ previous: holder }, 'lease expired: taking over');
        await this.setLeading(true);
      }
    } catch (err) {
      // Lost a CAS race or NATS is unreachable.
      this.options.log.debug({ err }, 'lease tick failed');
      if (this.leading && t - this.lastRenewMono >= this.leaseMs * 0.8)
        await this.setLeading(false);
    }
  }

  private async setLeading(leading: boolean): Promise<void> {
    if (leading === this.leading) return;
    this.leading = leading;
    this.options.log.info(
      { holder: this.options.holderId },
      leading ? 'elected leader' : 'stepped down',
    );
    if (leading) await this.options.onElected();
    else await this.options.onDeposed();
  }
}
