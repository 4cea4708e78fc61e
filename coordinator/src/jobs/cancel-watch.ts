import { setMaxListeners } from 'node:events';
import { cancelledError, CancelReason, eventsSubject, Header } from '@troupe/proto';
import { type Subscription } from '@nats-io/transport-node';
import { type JobRuntime } from './job-runtime';

/** A task's hold on its job's cancellation (see {@link CancelWatches.acquire}). */
export interface CancelHold {
  /** Aborts with a USER cancellation when the job is cancelled. */
  readonly signal: AbortSignal;
  /** The task no longer needs it (idempotent). */
  release(): void;
}

interface Watch {
  readonly ctrl: AbortController;
  readonly sub: Subscription;
  /** Settles once the job record was read after subscribing. */
  readonly ready: Promise<void>;
  readonly openedAtMs: number;
  users: number;
  linger?: NodeJS.Timeout;
  closed: boolean;
}

/** Options of {@link CancelWatches}. */
export interface CancelWatchesOptions {
  /**
   * A watch is handed to new tasks for at most this long after it was opened; later ones open a
   * fresh one (a read of the job record). Bounds what a core subscription could have missed
   * while the connection was down. @default 10000
   */
  maxReuseMs?: number;
  /** How long a watch no task holds stays open for the job's next task. @default 10000 */
  lingerMs?: number;
}

/**
 * The cancellation of jobs as the task actors of this process see it. A job is cancelled by its
 * `JOB_CANCEL_REQUESTED` event; a core subscription to the job's event subject sees it as it is
 * stored. One subscription per job is shared by all of its tasks running here: one per task made
 * every event of a job reach every running task of it (hundreds of deliveries per event at high
 * concurrency), and cost each task a subscription, its removal and a read of the job record.
 *
 * A watch subscribes first and then reads the job record, so a cancellation stored before the
 * subscription is not missed; a task given an existing watch relies on that watch's read. The
 * watch of a cancelled job is never handed out again: tasks that start after it (a resumed job's)
 * read the record afresh.
 */
export class CancelWatches {
  private readonly watches = new Map<string, Watch>();
  private readonly maxReuseMs: number;
  private readonly lingerMs: number;

  constructor(
    private readonly runtime: () => JobRuntime,
    options: CancelWatchesOptions = {},
  ) {
    this.maxReuseMs = options.maxReuseMs ?? 10_000;
    this.lingerMs = options.lingerMs ?? 10_000;
  }

  /** Number of jobs watched now (for tests). */
  get size(): number {
    return this.watches.size;
  }

  /**
   * Holds the cancellation of `jobId`; rejects when the job record cannot be read (the task then
   * fails as an infrastructure error, as any read of its job would).
   */
  async acquire(jobId: string): Promise<CancelHold> {
    let w = this.watches.get(jobId);
    if (!w || Date.now() - w.openedAtMs > this.maxReuseMs) {
      if (w) this.retire(jobId, w);
      w = this.open(jobId);
      this.watches.set(jobId, w);
    }
    const watch = w;
    watch.users++;
    clearTimeout(watch.linger);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.release(jobId, watch);
    };
    try {
      await watch.ready;
    } catch (err) {
      release();
      throw err;
    }
    return { signal: watch.ctrl.signal, release };
  }

  /** Closes every watch (the host stops). */
  close(): void {
    for (const [jobId, w] of this.watches) this.retire(jobId, w);
  }

  private open(jobId: string): Watch {
    const rt = this.runtime();
    const ctrl = new AbortController();
    // Every running task of the job listens to this one signal (up to the job's concurrency).
    setMaxListeners(0, ctrl.signal);
    const cancelled = () => {
      if (!ctrl.signal.aborted) ctrl.abort(cancelledError(CancelReason.USER));
      this.retire(jobId, watch);
    };
    const sub = rt.nc.subscribe(eventsSubject(rt.cluster, jobId), {
      callback: (err, m) => {
        if (!err && m.headers?.get(Header.EVENT_TYPE) === 'JOB_CANCEL_REQUESTED') cancelled();
      },
    });
    const ready = rt.store.getJob(jobId).then(
      (record) => {
        if (record?.cancelRequested || record?.state === 'CANCELLED') cancelled();
      },
      (err: unknown) => {
        this.retire(jobId, watch);
        throw err;
      },
    );
    const watch: Watch = { ctrl, sub, ready, openedAtMs: Date.now(), users: 0, closed: false };
    return watch;
  }

  private release(jobId: string, w: Watch): void {
    w.users--;
    if (w.users > 0) return;
    if (this.watches.get(jobId) !== w) {
      this.close1(w);
      return;
    }
    w.linger = setTimeout(() => {
      if (w.users === 0) this.retire(jobId, w);
    }, this.lingerMs);
    w.linger.unref();
  }

  /** No task gets `w` any more; it closes once no task holds it. */
  private retire(jobId: string, w: Watch): void {
    if (this.watches.get(jobId) === w) this.watches.delete(jobId);
    if (w.users === 0) this.close1(w);
  }

  private close1(w: Watch): void {
    if (w.closed) return;
    w.closed = true;
    clearTimeout(w.linger);
    w.sub.unsubscribe();
  }
}
