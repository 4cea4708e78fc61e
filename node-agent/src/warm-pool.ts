import {
  cancelledError,
  delay,
  ErrorCode,
  fromAbortSignal,
  type Logger,
  noopLogger,
  parseWith,
  throwIfAborted,
  TroupeError,
} from '@troupe/proto';
import { z } from 'zod';
import { randomId } from './internal/ids';
import type { Sandbox } from './sandbox';
import type { SandboxBackend } from './sandbox-backend';
import { parseSandboxSpec, type SandboxSpec, type SandboxSpecOptions } from './sandbox-spec';

/** The actor label of sandboxes a pool creates (Docker cannot relabel them once handed out). */
export const POOL_ACTOR = 'pool';

/** Validated settings of a {@link WarmPool}. */
export const WarmPoolConfigSchema = z
  .object({
    /** Ready sandboxes to keep waiting. @default 2 */
    size: z.int().min(0).max(256).default(2),
    /** Sandboxes created at the same time while refilling. @default 2 */
    maxConcurrentCreates: z.int().min(1).max(64).default(2),
    /** First pause after a failed creation (doubles up to 30 s). @default 500 */
    retryDelayMs: z.int().min(1).default(500),
  })
  .strict();

/** Validated settings of a {@link WarmPool}. */
export type WarmPoolConfig = z.output<typeof WarmPoolConfigSchema>;

/** Options of {@link WarmPool}. */
export interface WarmPoolOptions extends z.input<typeof WarmPoolConfigSchema> {
  /** Where sandboxes come from. */
  backend: SandboxBackend;
  /**
   * The spec every pooled sandbox gets (policy, limits, image). Its labels' `actor` and `job` are
   * replaced by `pool` and `''`; the pool id goes into the `troupe.pool` label.
   */
  spec: SandboxSpecOptions | SandboxSpec;
  /** Pool id. @default a random `pool-…` id */
  id?: string;
  /** Logger. @default a logger that drops everything */
  logger?: Logger;
}

interface Waiter {
  resolve(s: Sandbox): void;
  reject(err: unknown): void;
}

/**
 * Keeps `size` ready sandboxes of one spec so {@link acquire} hands one out without waiting for
 * Docker, and refills in the background.
 *
 * Ownership: Docker labels are fixed at creation, so a pooled sandbox keeps `troupe.actor=pool`
 * and `troupe.pool=<id>` after it is handed out. The pool remembers (in memory) which sandboxes
 * it handed to whom; the {@link Reaper} treats every object with a live pool's id as owned (pass
 * `livePoolIds`), so keep a pool's id listed until the sandboxes it handed out are destroyed —
 * normally for the node agent's lifetime. After a crash the pool id is not live any more and the
 * reaper removes them all.
 */
export class WarmPool {
  /** Pool id (the `troupe.pool` label). */
  readonly id: string;
  /** Validated settings. */
  readonly config: WarmPoolConfig;
  /** The spec pooled sandboxes are created with. */
  readonly spec: SandboxSpec;
  private readonly backend: SandboxBackend;
  private readonly log: Logger;
  private readonly idle: Sandbox[] = [];
  private readonly waiters: Waiter[] = [];
  private readonly handedOut = new Map<string, { actor?: string; job?: string; at: number }>();
  private readonly inFlight = new Set<Promise<void>>();
  private creating = 0;
  private failures = 0;
  private totalFailures = 0;
  private lastError: unknown;
  private backoff: Promise<void> | undefined;
  private closed = false;

  constructor(options: WarmPoolOptions) {
    const { backend, spec, id, logger, ...rest } = options;
    this.config = parseWith(WarmPoolConfigSchema, rest, { prefix: 'options' });
    this.backend = backend;
    this.id = id ?? randomId('pool').slice(0, 17);
    this.spec = parseSandboxSpec({
      ...spec,
      labels: { ...spec.labels, actor: POOL_ACTOR, job: '' },
    });
    this.log = (logger ?? noopLogger).child({ component: 'warm-pool', poolId: this.id });
  }

  /** Ready sandboxes waiting to be acquired. */
  get idleCount(): number {
    return this.idle.length;
  }

  /** Sandboxes handed out and not reported destroyed. */
  get handedOutCount(): number {
    return this.handedOut.size;
  }

  /** Starts filling the pool (idempotent); {@link acquire} also starts it. */
  start(): void {
    this.refill();
  }

  /**
   * Resolves once `size` sandboxes are idle (or the pool is closed).
   * @throws the creation error when a sandbox cannot be created meanwhile
   */
  async filled(options: { signal?: AbortSignal } = {}): Promise<void> {
    this.refill();
    const failuresBefore = this.totalFailures;
    while (!this.closed && this.idle.length < this.config.size) {
      throwIfAborted(options.signal);
      if (this.totalFailures > failuresBefore) throw this.lastError;
      const pending = [...this.inFlight];
      if (pending.length === 0 && this.backoff) await this.backoff;
      else if (pending.length > 0) await Promise.race(pending);
      else this.refill();
    }
  }

  /**
   * Hands out a ready sandbox: immediately when one is idle, else as soon as one is created. The
   * caller owns it from now on and must destroy it.
   *
   * @param options.owner - who gets it (kept in memory for status reports)
   * @throws TroupeError `CANCELLED` when the pool closes or `signal` aborts first; the creation
   *   error when sandboxes cannot be created
   */
  async acquire(
    options: { signal?: AbortSignal; owner?: { actor?: string; job?: string } } = {},
  ): Promise<Sandbox> {
    const { signal, owner } = options;
    throwIfAborted(signal);
    if (this.closed) throw cancelledError('shutdown');
    let sandbox: Sandbox | undefined;
    while ((sandbox = this.idle.shift()) !== undefined) {
      if (sandbox.status === 'ready') break;
      // Died while waiting (destroyed, reset failed): drop it.
      void sandbox.destroy().catch(() => undefined);
    }
    if (sandbox === undefined) {
      sandbox = await new Promise<Sandbox>((resolve, reject) => {
        const waiter: Waiter = {
          resolve: (s) => {
            signal?.removeEventListener('abort', onAbort);
            resolve(s);
          },
          reject: (err) => {
            signal?.removeEventListener('abort', onAbort);
            // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- pass on what was thrown
            reject(err);
          },
        };
        const onAbort = (): void => {
          const i = this.waiters.indexOf(waiter);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(fromAbortSignal(signal as AbortSignal));
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        this.waiters.push(waiter);
        this.refill();
      });
    }
    this.handedOut.set(sandbox.id, { ...owner, at: Date.now() });
    this.refill();
    return sandbox;
  }

  /** Forgets a handed-out sandbox (call after destroying it, for accurate counts). */
  release(sandboxId: string): void {
    this.handedOut.delete(sandboxId);
  }

  /** Whether a sandbox came from this pool and is idle or handed out. */
  owns(sandboxId: string): boolean {
    return this.handedOut.has(sandboxId) || this.idle.some((s) => s.id === sandboxId);
  }

  private refill(): void {
    if (this.closed || this.backoff) return;
    const wanted = Math.max(this.config.size, 0) + this.waiters.length;
    while (
      this.idle.length + this.creating < wanted &&
      this.creating < this.config.maxConcurrentCreates
    ) {
      this.creating += 1;
      const p: Promise<void> = this.createOne().finally(() => {
        this.creating -= 1;
        this.inFlight.delete(p);
        this.refill();
      });
      this.inFlight.add(p);
    }
  }

  private async createOne(): Promise<void> {
    let sandbox: Sandbox;
    try {
      sandbox = await this.backend.create(this.spec, { poolId: this.id });
    } catch (err) {
      this.failures += 1;
      this.totalFailures += 1;
      this.lastError = err;
      const pauseMs = Math.min(30_000, this.config.retryDelayMs * 2 ** (this.failures - 1));
      this.log.warn({ err, failures: this.failures, pauseMs }, 'pool could not create a sandbox');
      // Callers waiting on a pool that cannot create sandboxes get the reason, not a hang.
      this.waiters.shift()?.reject(err);
      this.backoff ??= delay(pauseMs).finally(() => {
        this.backoff = undefined;
        this.refill();
      });
      return;
    }
    this.failures = 0;
    if (this.closed) {
      await sandbox.destroy().catch(() => undefined);
      return;
    }
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve(sandbox);
    else this.idle.push(sandbox);
  }

  /**
   * Stops refilling, fails pending acquires with `CANCELLED`, and destroys the idle sandboxes
   * (and those still being created). Handed-out sandboxes are their owners' to destroy.
   */
  async close(options: { signal?: AbortSignal } = {}): Promise<void> {
    this.closed = true;
    for (const w of this.waiters.splice(0)) w.reject(cancelledError('shutdown'));
    await Promise.allSettled([...this.inFlight]);
    const idle = this.idle.splice(0);
    const results = await Promise.allSettled(idle.map((s) => s.destroy(options)));
    const failed = results.filter((r) => r.status === 'rejected').length;
    if (failed > 0) {
      this.log.warn({ failed }, 'some pooled sandboxes could not be destroyed');
      throw new TroupeError(
        ErrorCode.UNAVAILABLE,
        `warm pool ${this.id}: ${failed} sandboxes not destroyed`,
      );
    }
  }
}
