import { type Logger, noopLogger } from '@troupe/actors';
import {
  invalidArgument,
  type RolloutRequest__Output,
  type RolloutResponse,
  type RolloutResult,
} from '@troupe/proto';
import { type JobManager, type TaskResultView } from './job-manager';
import { toWireAggregate } from './job-wire';
import { parseRolloutTaskId, ROLLOUT_JOB_KIND, rolloutJobSpec } from './rollout-spec';

/** Largest trajectory returned inline per rollout (larger ones stay an artifact only). */
export const MAX_INLINE_TRAJECTORY_BYTES = 8 * 1024 * 1024;

/** What a caller passes to {@link RolloutService}. */
export interface RolloutServiceOptions {
  jobs: Pick<JobManager, 'submit' | 'get' | 'watch' | 'results' | 'artifact' | 'cancel'>;
  logger?: Logger;
}

/**
 * The RL rollout methods of the job API over the job manager: a `Rollout` call is a job of kind
 * `rollout` (one code path for one episode and for a batch), submitted, followed to its end and
 * read back as rollouts — trajectory (from the task's `trajectory.jsonl` artifact), reward (the
 * grader's score) and usage (from the grade's details).
 */
export class RolloutService {
  private readonly log: Logger;

  constructor(private readonly options: RolloutServiceOptions) {
    this.log = (options.logger ?? noopLogger).child({ component: 'rollouts' });
  }

  /**
   * Submits the request's rollout job and, unless `noWait`, waits for it to finish and returns
   * its rollouts. When `signal` aborts (the call's deadline, the client's cancel) the job is
   * cancelled: nobody is waiting for its episodes any more.
   */
  async rollout(req: RolloutRequest__Output, signal: AbortSignal): Promise<RolloutResponse> {
    const spec = rolloutJobSpec(req);
    const record = await this.options.jobs.submit({
      spec: JSON.stringify(spec),
      format: 'json',
      ...(req.idempotencyKey ? { idempotencyKey: req.idempotencyKey } : {}),
      signal,
    });
    if (req.noWait) return { jobId: record.jobId, state: record.state, rollouts: [] };
    try {
      const events = await this.options.jobs.watch(record.jobId, { signal });
      for await (const e of events) if (e.type === 'JOB_FINISHED') break;
      signal.throwIfAborted();
    } catch (err) {
      if (signal.aborted) {
        await this.options.jobs
          .cancel(
            record.jobId,
            'the Rollout call ended before its job',
            AbortSignal.timeout(15_000),
          )
          .catch((e: unknown) =>
            this.log.warn(
              { err: e, jobId: record.jobId },
              'could not cancel an abandoned rollout job',
            ),
          );
      }
      throw err;
    }
    return this.get(record.jobId, signal);
  }

  /** The rollouts of a `rollout` job so far. */
  async get(jobId: string, signal?: AbortSignal): Promise<RolloutResponse> {
    const record = await this.options.jobs.get(jobId);
    if (record.kind !== ROLLOUT_JOB_KIND) {
      throw invalidArgument(
        'job_id',
        `must name a rollout job (this job is of kind ${record.kind})`,
        jobId,
      );
    }
    const rollouts: RolloutResult[] = [];
    let page = await this.options.jobs.results(jobId, { ...(signal ? { signal } : {}) });
    const results = page;
    for (;;) {
      for (const t of page.tasks) rollouts.push(await this.toRollout(jobId, t, signal));
      if (!page.nextPageToken) break;
      page = await this.options.jobs.results(jobId, {
        ...(signal ? { signal } : {}),
        pageToken: page.nextPageToken,
      });
    }
    return {
      jobId,
      state: results.state,
      aggregate: toWireAggregate(results.aggregate),
      rollouts,
    };
  }

  private async toRollout(
    jobId: string,
    t: TaskResultView,
    signal: AbortSignal | undefined,
  ): Promise<RolloutResult> {
    const id = parseRolloutTaskId(t.taskId);
    const d = t.details?.['rollout'] as
      { promptTokens?: unknown; completionTokens?: unknown; steps?: unknown } | undefined;
    const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
    const trajectoryPath = t.artifacts.find((a) => a.endsWith('/trajectory.jsonl'));
    const finished = t.status !== 'TASK_PENDING' && t.status !== 'TASK_RUNNING';
    return {
      rolloutId: t.taskId,
      taskId: id?.taskId ?? t.taskId,
      sampleIndex: id?.sampleIndex ?? 0,
      status: t.status,
      ...(t.score !== undefined ? { reward: t.score } : {}),
      passed: t.status === 'TASK_PASSED',
      stopReason: t.stopReason,
      usage: {
        promptTokens: num(d?.promptTokens),
        completionTokens: num(d?.completionTokens),
        steps: num(d?.steps),
      },
      trajectoryJson:
        finished && trajectoryPath ? await this.readTrajectory(jobId, trajectoryPath, signal) : '',
      error: t.error,
      durationMs: t.durationMs,
    };
  }

  /** The first line of a `trajectory.jsonl` artifact (one session per episode). */
  private async readTrajectory(
    jobId: string,
    path: string,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    try {
      const reader = await this.options.jobs.artifact(jobId, path);
      if (reader.size > MAX_INLINE_TRAJECTORY_BYTES) return '';
      const parts: Buffer[] = [];
      for await (const chunk of reader.chunks) {
        signal?.throwIfAborted();
        parts.push(Buffer.from(chunk));
      }
      const text = Buffer.concat(parts).toString('utf8');
      const nl = text.indexOf('\n');
      return (nl === -1 ? text : text.slice(0, nl)).trim();
    } catch (err) {
      if (signal?.aborted) throw err;
      this.log.warn({ err, jobId, path }, 'trajectory of a rollout not readable');
      return '';
    }
  }
}
