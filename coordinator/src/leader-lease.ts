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
 *
 * Two rules keep a JetStream hiccup (the lease stream electing a new leader after a server loss)
 * from moving the leadership:
 * - Renewals never wait for `onElected`/`onDeposed`: a leader whose services take seconds to
 *   start (their streams are electing too) keeps renewing meanwhile. The callbacks run one after
 *   another, in order, on a chain of their own.
 * - A standby that could not read the lease starts watching it afresh: it takes over only after
 *   seeing one revision for `leaseMs` of successful reads, so a leader that renews as soon as the
 *   stream answers again keeps its lease. (Safety does not depend on this: the leader steps down
 *   on its own clock before any standby's `leaseMs` after its last renewal has passed.)
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
  /** `onElected`/`onDeposed` calls, chained so they run in order and never overlap. */
  private transitions: Promise<void> = Promise.resolve();

  constructor(private readonly options: LeaderLeaseOptions) {
    this.leaseMs = options.leaseMs ?? 5_000;
    this.renewMs = options.renewMs ?? 1_000;
  }

  /** True while this process leads. */
  get isLeader(): boolean {
    return this.leading;
  }

  /** Starts competing for the lease; resolves once a leadership won on the first try has started. */
  async start(): Promise<void> {
    await this.tick();
    this.timer = setInterval(() => {
      // Step down on our own clock even when a tick hangs on an unreachable server, so we never
      // lead past the point where a standby may take over.
      if (this.leading && performance.now() - this.lastRenewMono >= this.leaseMs * 0.8) {
        this.setLeading(false);
      }
      if (!this.busy) this.busy = this.tick().finally(() => (this.busy = undefined));
    }, this.renewMs);
    this.timer.unref();
    // Renewals run meanwhile: services that start slowly must not cost the lease.
    await this.transitions;
  }

  /** Stops competing; a leader releases the lease so a standby takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.busy;
    if (this.leading) {
      this.setLeading(false);
      await this.transitions;
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
        this.setLeading(true);
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
        this.setLeading(true);
        return;
      }
      if (this.leading) this.setLeading(false); // someone else holds it
      if (t - this.lastChangeMono >= this.leaseMs) {
        this.lastRevision = await this.options.kv.update(KEY, body, e.revision);
        this.lastRenewMono = t;
        this.options.log.warn({ previous: holder }, 'lease expired: taking over');
        this.setLeading(true);
      }
    } catch (err) {
      // Lost a CAS race or NATS is unreachable. A standby watches the lease afresh once it can
      // read it again (see the class comment).
      this.options.log.debug({ err }, 'lease tick failed');
      this.lastRevision = -1;
      if (this.leading && t - this.lastRenewMono >= this.leaseMs * 0.8) this.setLeading(false);
    }
  }

  /** Records the change and chains its callback; never waits for it. */
  private setLeading(leading: boolean): void {
    if (leading === this.leading) return;
    this.leading = leading;
    this.options.log.info(
      { holder: this.options.holderId },
      leading ? 'elected leader' : 'stepped down',
    );
    const callback = leading ? this.options.onElected : this.options.onDeposed;
    this.transitions = this.transitions
      .then(() => callback())
      .catch((err: unknown) => {
        this.options.log.error({ err }, 'leadership callback failed');
      });
  }
}
