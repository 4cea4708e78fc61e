import { invalidArgument } from '@troupe/proto';
import { type JobRecord, JobRecordSchema } from './job-record';
import { type JobStore } from './job-store';

/** What a caller passes to {@link watchJobList}. */
export interface WatchJobListOptions {
  /** Only these states (wire names); empty = all. */
  states?: readonly string[];
  /** Only jobs carrying all these labels. */
  labels?: Record<string, string>;
  /** Size of the view: the newest matching jobs. @default 50, at most 1000 */
  limit?: number;
  /** Ends the watch. */
  signal: AbortSignal;
}

/** One change of the view: the whole view when `snapshot`, else what entered, changed or left. */
export interface JobListChange {
  snapshot: boolean;
  /** Newest first in a snapshot. */
  jobs: JobRecord[];
  removed: string[];
}

const MAX_LIMIT = 1_000;
const DEFAULT_LIMIT = 50;

/** The order of job listings: newest first, then by id (descending). */
function newer(a: { createdUnixMs: number; jobId: string }, b: typeof a): boolean {
  return (
    a.createdUnixMs > b.createdUnixMs || (a.createdUnixMs === b.createdUnixMs && a.jobId > b.jobId)
  );
}

/**
 * The job list as a stream (WatchJobs): a snapshot of the `limit` newest jobs matching the
 * filters — read the way {@link JobStore.listJobs} reads, with the bucket revision it reached —
 * then the jobs bucket followed from the next revision, so no change is lost or repeated between
 * the two. The view is kept here, not by the client: a record of a job outside it that is older
 * than everything in a full view is not sent at all, and a newer job pushes the oldest one out.
 * After a deletion the view may hold fewer than `limit` jobs until the next snapshot (a new stream).
 */
export async function* watchJobList(
  store: JobStore,
  options: WatchJobListOptions,
): AsyncGenerator<JobListChange> {
  if (options.limit !== undefined && options.limit < 0) {
    throw invalidArgument('limit', 'must be >= 0', options.limit);
  }
  const limit = Math.min(MAX_LIMIT, options.limit || DEFAULT_LIMIT);
  const states = new Set(options.states ?? []);
  const labels = Object.entries(options.labels ?? {});
  const matches = (r: { state: string; labels: Record<string, string> }) =>
    (states.size === 0 || states.has(r.state)) && labels.every(([k, v]) => r.labels[k] === v);

  const { jobs: listed, revision } = await store.listJobsAt();
  // The view: job id -> what orders it.
  const view = new Map<string, { createdUnixMs: number; jobId: string }>();
  const first = listed
    .filter(matches)
    .sort((a, b) => (newer(a, b) ? -1 : 1))
    .flatMap((j) => {
      const parsed = JobRecordSchema.safeParse(j.stored);
      return parsed.success ? [parsed.data] : [];
    })
    .slice(0, limit);
  for (const j of first) view.set(j.jobId, { createdUnixMs: j.createdUnixMs, jobId: j.jobId });
  yield { snapshot: true, jobs: first, removed: [] };

  const oldest = () => {
    let o: { createdUnixMs: number; jobId: string } | undefined;
    for (const v of view.values()) if (!o || newer(o, v)) o = v;
    return o;
  };
  for await (const { jobId, stored } of store.watchJobs(revision, options.signal)) {
    const parsed = stored === undefined ? undefined : JobRecordSchema.safeParse(stored);
    const record = parsed?.success ? parsed.data : undefined;
    if (!record || !matches(record)) {
      if (view.delete(jobId)) yield { snapshot: false, jobs: [], removed: [jobId] };
      continue;
    }
    if (view.has(jobId)) {
      yield { snapshot: false, jobs: [record], removed: [] };
      continue;
    }
    const last = oldest();
    if (view.size >= limit && last && !newer(record, last)) continue;
    view.set(jobId, { createdUnixMs: record.createdUnixMs, jobId });
    const removed: string[] = [];
    if (view.size > limit && last) {
      view.delete(last.jobId);
      removed.push(last.jobId);
    }
    yield { snapshot: false, jobs: [record], removed };
  }
}
