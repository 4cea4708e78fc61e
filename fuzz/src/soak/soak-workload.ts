import { TroupeClient } from '@troupe/client';

/** Options of {@link runSoakWorkload}. */
export interface SoakWorkloadOptions {
  address: string;
  token: string;
  /** Tasks per job. */
  jobTasks: number;
  /** Tasks a job runs at once. */
  concurrency: number;
  /** Jobs in flight at once. */
  parallelJobs: number;
  /** Stop starting jobs once this many tasks were started… */
  maxTasks: number;
  /** …or once this `Date.now()` has passed. */
  until: number;
  /** The Docker image of the shell tasks (ignored by the process backend). */
  image: string;
  /** Stops the workload early (running jobs are cancelled, as at `until`). */
  signal?: AbortSignal;
  /** Called after each job with the tally (the same object, updated as jobs end). */
  onJob?: (done: SoakWorkloadTally) => void;
}

/** What the workload has run so far. */
export interface SoakWorkloadTally {
  jobs: number;
  /** Tasks with a final status. */
  tasks: number;
  passed: number;
  /** Jobs that did not end SUCCEEDED with every task passed, with why. */
  failures: string[];
  /** Jobs still running at `until` (or the abort), cancelled and not judged. */
  cut: number;
}

/**
 * Runs `shell-tasks` jobs through the job API, as a user would: `parallelJobs` loops, each
 * submitting a job of `jobTasks` small shell commands (a file written and read back, some
 * output), watching it to its end over a `WatchJob` stream and reading the job back, until
 * `maxTasks` or `until` (a job still running then is cancelled). Every task of a finished job
 * must pass; a job that does not is a failure in the tally.
 */
export async function runSoakWorkload(options: SoakWorkloadOptions): Promise<SoakWorkloadTally> {
  const client = new TroupeClient({ address: options.address, token: options.token });
  const tally: SoakWorkloadTally = { jobs: 0, tasks: 0, passed: 0, failures: [], cut: 0 };
  // At `until` the jobs still running are cancelled: a soak lasts its duration, not its last job.
  const stop = AbortSignal.any([
    AbortSignal.timeout(Math.max(0, options.until - Date.now())),
    ...(options.signal ? [options.signal] : []),
  ]);
  let started = 0;
  let serial = 0;
  const more = () => started < options.maxTasks && Date.now() < options.until && !stop.aborted;
  const loop = async () => {
    while (more()) {
      const n = Math.min(options.jobTasks, options.maxTasks - started);
      started += n;
      const name = `soak-${++serial}`;
      const job = await client.submitJob({
        name,
        kind: 'shell-tasks',
        concurrency: options.concurrency,
        taskTimeoutMs: 120_000,
        labels: { suite: 'soak' },
        config: { image: options.image, memoryMb: 64 },
        tasks: {
          count: n,
          idPrefix: 's',
          command: 'echo "task {i}" > out.txt && cat out.txt && test "$(cat out.txt)" = "task {i}"',
        },
      });
      for await (const _event of client.watch(job.jobId, { signal: stop })) {
        // Drained: the stream ends after JOB_FINISHED.
      }
      if (stop.aborted) {
        const last = await client.getJob(job.jobId);
        if (!['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(String(last.state))) {
          await client.cancelJob(job.jobId, 'soak ended');
          tally.cut++;
          tally.tasks += last.progress?.done ?? 0;
          tally.passed += last.progress?.passed ?? 0;
          break;
        }
      }
      const done = await client.getJob(job.jobId);
      const progress = done.progress ?? { done: 0, passed: 0 };
      tally.jobs++;
      tally.tasks += progress.done;
      tally.passed += progress.passed;
      if (String(done.state) !== 'SUCCEEDED' || progress.passed !== n) {
        tally.failures.push(
          `${name} (${job.jobId}): ${String(done.state)}, ${progress.passed}/${n} passed${done.reason ? `: ${done.reason}` : ''}`,
        );
      }
      options.onJob?.(tally);
    }
  };
  try {
    await Promise.all(Array.from({ length: options.parallelJobs }, loop));
  } finally {
    client.close();
  }
  return tally;
}
