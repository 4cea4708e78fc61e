import { type JobResults__Output } from '@troupe/proto';
import { type DashboardApi } from './dashboard-api';

const FINAL_STATES = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

/** Largest page `GetResults` serves: a 100,000-task job is read in 20 calls. */
const READ_PAGE_SIZE = 5_000;

interface Entry {
  at: number;
  final: boolean;
  /** Tasks the last read returned: how long the next read may be put off. */
  tasks: number;
  value: Promise<JobResults__Output>;
}

/** What {@link ResultsCache} needs. */
export interface ResultsCacheOptions {
  api: DashboardApi;
  /** How long the results of a running job are reused, at least. @default 1000 */
  freshMs?: number;
  /**
   * How much longer per task of the job the whole results of a running job are reused: reading
   * them costs the coordinator a record per task, so a 100,000-task job is read at most every
   * 50 s however many browsers look, while its counts (see {@link ResultsCache.summary}) stay
   * fresh. @default 0.5
   */
  freshMsPerTask?: number;
  /** Jobs kept. @default 16 */
  maxJobs?: number;
}

/**
 * The results of recently viewed jobs, fetched once per freshness period however many browsers
 * page through them (a 10,000-task job's results are two gRPC calls, then paged from memory). A
 * finished job's results do not change and are kept until evicted. The job's aggregate alone
 * ({@link summary}) is a one-task page, fresh every `freshMs` at any job size.
 */
export class ResultsCache {
  private readonly full = new Map<string, Entry>();
  private readonly summaries = new Map<string, Entry>();
  private readonly freshMs: number;
  private readonly freshMsPerTask: number;
  private readonly maxJobs: number;

  constructor(private readonly options: ResultsCacheOptions) {
    this.freshMs = options.freshMs ?? 1000;
    this.freshMsPerTask = options.freshMsPerTask ?? 0.5;
    this.maxJobs = options.maxJobs ?? 16;
  }

  /** Every task's result and the aggregate, from the cache when fresh enough. */
  get(jobId: string, signal?: AbortSignal): Promise<JobResults__Output> {
    return this.read(this.full, jobId, true, () =>
      this.options.api.getResults(jobId, {
        pageSize: READ_PAGE_SIZE,
        ...(signal ? { signal } : {}),
      }),
    );
  }

  /**
   * The job's state and aggregate (its `tasks` hold at most one task): what a job's page shows
   * at the top, cheap at any size.
   */
  summary(jobId: string, signal?: AbortSignal): Promise<JobResults__Output> {
    // A finished job's whole results, when already read, answer it too.
    const whole = this.full.get(jobId);
    if (whole?.final) return whole.value;
    return this.read(this.summaries, jobId, false, () =>
      this.options.api.getResultsPage(jobId, { pageSize: 1, ...(signal ? { signal } : {}) }),
    );
  }

  private read(
    entries: Map<string, Entry>,
    jobId: string,
    scaled: boolean,
    fetch: () => Promise<JobResults__Output>,
  ): Promise<JobResults__Output> {
    const hit = entries.get(jobId);
    const now = Date.now();
    const freshFor = this.freshMs + (scaled && hit ? hit.tasks * this.freshMsPerTask : 0);
    if (hit && (hit.final || now - hit.at < freshFor)) {
      entries.delete(jobId);
      entries.set(jobId, hit);
      return hit.value;
    }
    const entry: Entry = { at: now, final: false, tasks: hit?.tasks ?? 0, value: fetch() };
    entry.value.then(
      (r) => {
        entry.final = FINAL_STATES.has(String(r.state));
        entry.tasks = r.tasks.length;
      },
      () => {
        if (entries.get(jobId) === entry) entries.delete(jobId);
      },
    );
    entries.delete(jobId);
    entries.set(jobId, entry);
    while (entries.size > this.maxJobs) {
      const oldest = entries.keys().next().value;
      if (oldest === undefined) break;
      entries.delete(oldest);
    }
    return entry.value;
  }
}
