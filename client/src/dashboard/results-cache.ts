import { type JobResults__Output } from '@troupe/proto';
import { type DashboardApi } from './dashboard-api';

const FINAL_STATES = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

interface Entry {
  at: number;
  final: boolean;
  value: Promise<JobResults__Output>;
}

/** What {@link ResultsCache} needs. */
export interface ResultsCacheOptions {
  api: DashboardApi;
  /** How long the results of a running job are reused. @default 1000 */
  freshMs?: number;
  /** Jobs kept. @default 16 */
  maxJobs?: number;
}

/**
 * The results of recently viewed jobs, fetched once per `freshMs` however many browsers page
 * through them (a 10,000-task job's results are one gRPC call, then paged from memory). A
 * finished job's results do not change and are kept until evicted.
 */
export class ResultsCache {
  private readonly entries = new Map<string, Entry>();
  private readonly freshMs: number;
  private readonly maxJobs: number;

  constructor(private readonly options: ResultsCacheOptions) {
    this.freshMs = options.freshMs ?? 1000;
    this.maxJobs = options.maxJobs ?? 16;
  }

  /** The job's results, from the cache when fresh enough. */
  get(jobId: string, signal?: AbortSignal): Promise<JobResults__Output> {
    const hit = this.entries.get(jobId);
    const now = Date.now();
    if (hit && (hit.final || now - hit.at < this.freshMs)) {
      this.entries.delete(jobId);
      this.entries.set(jobId, hit);
      return hit.value;
    }
    const entry: Entry = {
      at: now,
      final: false,
      value: this.options.api.getResults(jobId, signal ? { signal } : {}),
    };
    entry.value.then(
      (r) => {
        entry.final = FINAL_STATES.has(String(r.state));
      },
      () => {
        if (this.entries.get(jobId) === entry) this.entries.delete(jobId);
      },
    );
    this.entries.delete(jobId);
    this.entries.set(jobId, entry);
    while (this.entries.size > this.maxJobs) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
    return entry.value;
  }
}
