import { type Logger, type RetireOutcome } from '@troupe/actors';
import { type ActorAddress } from '@troupe/proto';
import { JobRecordSchema } from './jobs/job-record';
import { PassLoop } from './internal/pass-loop';
import { JOB_ACTOR_KIND } from './jobs/job-runtime';

/** What {@link JobSweeper} needs of the job machinery (a `JobManager` and its `JobStore`). */
export interface JobSweeperJobs {
  /** Every job record, as stored (`JobStore.listJobs`). */
  listJobs(): Promise<{ jobId: string; stored: unknown }[]>;
  /** Deletes a finished job (`JobManager.delete`). */
  delete(jobId: string): Promise<unknown>;
  /** Deleted jobs whose job actor is still to be retired (`JobStore.goneJobs`). */
  goneJobs(): Promise<string[]>;
  /** Forgets one of them, its record's marker too (`JobStore.forgetDeletedJob`). */
  forgetDeletedJob(jobId: string): Promise<void>;
  /** Whether the job's record is still stored (a deletion cut short after its `gone` note). */
  jobRecordStored(jobId: string): Promise<boolean>;
}

/** Options of {@link JobSweeper}. */
export interface JobSweeperOptions {
  /** Finished jobs are deleted this long after they finished; `null` keeps them. */
  retentionMs: number | null;
  /** How often to look. */
  intervalMs: number;
  jobs: JobSweeperJobs;
  /** Deletes one actor's records (`retireActor` of `@troupe/actors`). */
  retire: (addr: ActorAddress) => Promise<RetireOutcome>;
  /** Cancels a deleted job's pending reminders (they would wake its retired job actor). */
  cancelReminders: (jobId: string) => Promise<number>;
  log: Logger;
  /** Clock. @default Date.now */
  now?: () => number;
}

/**
 * The leader's sweep of finished jobs: deletes those finished longer than the retention ago
 * (as `DeleteJob` does) and retires the job actors of deleted jobs once they sleep (a job actor
 * stays live a while after its job ends, so a deletion usually finds it live and leaves a
 * `gone.<jobId>` note for this sweep).
 */
export class JobSweeper {
  private readonly loop: PassLoop;
  /** Jobs deleted for their retention (metrics). */
  deleted = 0;

  constructor(private readonly options: JobSweeperOptions) {
    this.loop = new PassLoop({
      intervalMs: options.intervalMs,
      pass: () => this.runPass(),
      onError: (err) => options.log.warn({ err }, 'job sweep failed'),
    });
  }

  /** Starts the passes. */
  start(): void {
    this.loop.start();
  }

  /** Stops; resolves when a pass in progress has ended. */
  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** One pass: expired jobs deleted, deleted jobs' sleeping job actors retired. */
  async runPass(): Promise<void> {
    const { retentionMs, jobs, log } = this.options;
    if (retentionMs !== null) {
      const now = (this.options.now ?? Date.now)();
      for (const listed of await jobs.listJobs()) {
        if (this.loop.stopped) return;
        const parsed = JobRecordSchema.safeParse(listed.stored);
        const finishedAt = parsed.success ? parsed.data.finishedUnixMs : 0;
        if (!parsed.success || !finishedAt || now - finishedAt < retentionMs) continue;
        if (!['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(parsed.data.state)) continue;
        try {
          await jobs.delete(listed.jobId);
          this.deleted++;
        } catch (err) {
          log.warn({ err, jobId: listed.jobId }, 'could not delete an expired job');
        }
      }
    }
    for (const jobId of await jobs.goneJobs()) {
      if (this.loop.stopped) return;
      if (await jobs.jobRecordStored(jobId)) {
        // Its deletion stopped between the note and the record (the record goes last): finish
        // it first. Retiring the job actor of a job that still shows would break it for good.
        await jobs.delete(jobId).catch((err: unknown) => {
          log.warn({ err, jobId }, 'could not finish a deletion cut short');
        });
        continue;
      }
      await this.options.cancelReminders(jobId);
      const outcome = await this.options.retire({ kind: JOB_ACTOR_KIND, id: jobId });
      // Live (it sleeps a while after its last message) or changed: the next pass tries again.
      if (outcome === 'retired' || outcome === 'absent') await jobs.forgetDeletedJob(jobId);
    }
  }
}
