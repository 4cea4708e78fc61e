import { type ActorAddress, parseActorKey } from '@troupe/proto';
import { type DirectoryEntry, type Logger, type RetireOutcome } from '@troupe/actors';
import { PassLoop } from './internal/pass-loop';

/** Options of {@link ActorReaper}. */
export interface ActorReaperOptions {
  /** A finished job's actors are retired this long after it finished. */
  retentionMs: number;
  /** How often finished jobs are looked for. */
  intervalMs: number;
  /**
   * When the job finished (ms since the epoch); `undefined` while it has not (running, resumed)
   * or when there is no such job.
   */
  finishedAt: (jobId: string) => Promise<number | undefined>;
  /** Deletes one actor's records (`retireActor` of `@troupe/actors`). */
  retire: (addr: ActorAddress) => Promise<RetireOutcome>;
  /** Told of each retired actor's directory key (the placement forgets its view of it). */
  onRetired?: (key: string) => void;
  log: Logger;
  /** Retirements in flight at once. @default 16 */
  concurrency?: number;
  /** Clock. @default Date.now */
  now?: () => number;
}

/**
 * Retires the actors of finished jobs: those whose directory entry carries `retireWithJob` (task
 * actors, sandboxes) are deleted — entry, state, inbox — once their job has been finished for
 * the retention, so a cluster's NATS memory does not grow with every task it ever ran. Runs on
 * the leader, fed by the placement's watch of the directory: a new leader's watch loads every
 * entry, so what an earlier leader had not retired yet is found again. An actor that is live
 * (a late wake) is tried again on the next pass; a job that is resumed is left alone while it
 * runs.
 */
export class ActorReaper {
  /** Job id → directory keys of its actors to retire. */
  private readonly byJob = new Map<string, Set<string>>();
  private readonly loop: PassLoop;
  /** Actors retired (metrics). */
  retired = 0;

  constructor(private readonly options: ActorReaperOptions) {
    this.loop = new PassLoop({
      intervalMs: options.intervalMs,
      pass: () => this.runPass(),
      onError: (err) => options.log.warn({ err }, 'actor retirement pass failed'),
    });
  }

  /** Takes in one watched directory entry (undefined: deleted). */
  observe = (key: string, entry: DirectoryEntry | undefined): void => {
    if (!entry?.retireWithJob || !entry.jobId) return;
    let keys = this.byJob.get(entry.jobId);
    if (!keys) this.byJob.set(entry.jobId, (keys = new Set()));
    keys.add(key);
  };

  /** Actors known and not retired yet, per job (for tests and metrics). */
  pending(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [jobId, keys] of this.byJob) out[jobId] = keys.size;
    return out;
  }

  /** Starts the passes. */
  start(): void {
    this.loop.start();
  }

  /** Stops; resolves when a pass in progress has ended. */
  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** One pass: every job past its retention gets its actors retired. */
  async runPass(): Promise<void> {
    const now = (this.options.now ?? Date.now)();
    for (const [jobId, keys] of [...this.byJob]) {
      if (this.loop.stopped) return;
      const finishedAt = await this.options.finishedAt(jobId);
      if (finishedAt === undefined || now - finishedAt < this.options.retentionMs) continue;
      const outcomes = await this.retireAll(keys);
      if (keys.size === 0) this.byJob.delete(jobId);
      if (outcomes.retired > 0 || outcomes.kept > 0) {
        this.options.log.info({ jobId, ...outcomes }, "retired a finished job's actors");
      }
    }
  }

  private async retireAll(keys: Set<string>): Promise<{ retired: number; kept: number }> {
    const queue = [...keys];
    let retired = 0;
    let kept = 0;
    const worker = async () => {
      for (let key = queue.pop(); key !== undefined && !this.loop.stopped; key = queue.pop()) {
        const addr = parseActorKey(key);
        let outcome: RetireOutcome | 'failed' = 'absent';
        if (addr) {
          try {
            outcome = await this.options.retire(addr);
          } catch (err) {
            this.options.log.warn({ err, actor: key }, 'could not retire an actor');
            outcome = 'failed';
          }
        }
        if (outcome === 'retired' || outcome === 'absent') {
          keys.delete(key);
          // Also when absent: the watch may have shown the STOPPED write after the last forget.
          this.options.onRetired?.(key);
          if (outcome === 'retired') {
            retired++;
            this.retired++;
          }
        } else {
          kept++; // live, changed or failed: the next pass tries again
        }
      }
    };
    await Promise.all(
      Array.from({ length: Math.min(queue.length, this.options.concurrency ?? 16) }, worker),
    );
    return { retired, kept };
  }
}
