import { type JobResults__Output } from '@troupe/proto';
import { type DashboardApi } from './dashboard-api';

const FINAL_STATES = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

/** Largest page `GetResults` serves: a 100,000-task job is read in 20 calls. */
const READ_PAGE_SIZE = 5_000;

interface Entry {
  at: number;
  final: boolean;
  /** The read has answered (its `value` is resolved). */
  done?: JobResults__Output;
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
  /** Pages of rows kept ({@link ResultsCache.window}). @default 256 */
  maxWindows?: number;
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
  private readonly windows = new Map<string, Entry>();
  /** Plan index of task ids seen in windows, per job: a task page finds its task by it. */
  private readonly positions = new Map<string, Map<string, number>>();
  private readonly freshMs: number;
  private readonly freshMsPerTask: number;
  private readonly maxJobs: number;
  private readonly maxWindows: number;

  constructor(private readonly options: ResultsCacheOptions) {
    this.freshMs = options.freshMs ?? 1000;
    this.freshMsPerTask = options.freshMsPerTask ?? 0.5;
    this.maxJobs = options.maxJobs ?? 16;
    this.maxWindows = options.maxWindows ?? 256;
  }

  /** Every task's result and the aggregate, from the cache when fresh enough. */
  get(jobId: string, signal?: AbortSignal): Promise<JobResults__Output> {
    return this.read(this.full, jobId, this.maxJobs, true, () =>
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
    return this.read(this.summaries, jobId, this.maxJobs, false, () =>
      this.options.api.getResultsPage(jobId, { pageSize: 1, ...(signal ? { signal } : {}) }),
    );
  }

  /**
   * Tasks `offset` to `offset + limit` in plan order, with the aggregate: a slice of the whole
   * results when they are held and fresh, else one `GetResults` page from `offset`. What the
   * first screen of a job's page costs, at any job size.
   */
  async window(
    jobId: string,
    offset: number,
    limit: number,
    signal?: AbortSignal,
  ): Promise<JobResults__Output> {
    const whole = this.held(jobId);
    if (whole) return { ...whole, tasks: whole.tasks.slice(offset, offset + limit) };
    const page = await this.read(
      this.windows,
      `${jobId}/${offset}/${limit}`,
      this.maxWindows,
      false,
      () =>
        this.options.api.getResultsPage(jobId, {
          offset,
          pageSize: limit,
          ...(signal ? { signal } : {}),
        }),
    );
    let known = this.positions.get(jobId);
    if (!known) {
      known = new Map();
      this.positions.set(jobId, known);
      this.trim(this.positions, this.maxJobs);
    }
    if (known.size > 200_000) known.clear();
    page.tasks.forEach((t, k) => known.set(t.taskId, offset + k));
    return page;
  }

  /**
   * One task's result: from the whole results when they are held and fresh, else read alone by
   * its plan index when a window showed it (the row a person clicked), else found in the whole
   * results (read for it).
   */
  async task(
    jobId: string,
    taskId: string,
    signal?: AbortSignal,
  ): Promise<JobResults__Output['tasks'][number] | undefined> {
    const at = this.positions.get(jobId)?.get(taskId);
    if (at !== undefined && !this.held(jobId)) {
      const page = await this.options.api.getResultsPage(jobId, {
        offset: at,
        pageSize: 1,
        ...(signal ? { signal } : {}),
      });
      if (page.tasks[0]?.taskId === taskId) return page.tasks[0];
    }
    return (await this.get(jobId, signal)).tasks.find((t) => t.taskId === taskId);
  }

  /** The whole results of the job when read, and final or read within `freshMs`. */
  private held(jobId: string): JobResults__Output | undefined {
    const whole = this.full.get(jobId);
    return whole?.done && (whole.final || Date.now() - whole.at < this.freshMs)
      ? whole.done
      : undefined;
  }

  private trim<V>(entries: Map<string, V>, max: number): void {
    while (entries.size > max) {
      const oldest = entries.keys().next().value;
      if (oldest === undefined) break;
      entries.delete(oldest);
    }
  }

  private read(
    entries: Map<string, Entry>,
    key: string,
    max: number,
    scaled: boolean,
    fetch: () => Promise<JobResults__Output>,
  ): Promise<JobResults__Output> {
    const hit = entries.get(key);
    const now = Date.now();
    const freshFor = this.freshMs + (scaled && hit ? hit.tasks * this.freshMsPerTask : 0);
    if (hit && (hit.final || now - hit.at < freshFor)) {
      entries.delete(key);
      entries.set(key, hit);
      return hit.value;
    }
    const entry: Entry = { at: now, final: false, tasks: hit?.tasks ?? 0, value: fetch() };
    entry.value.then(
      (r) => {
        entry.final = FINAL_STATES.has(String(r.state));
        entry.tasks = r.tasks.length;
        entry.done = r;
      },
      () => {
        if (entries.get(key) === entry) entries.delete(key);
      },
    );
    entries.delete(key);
    entries.set(key, entry);
    this.trim(entries, max);
    return entry.value;
  }
}
