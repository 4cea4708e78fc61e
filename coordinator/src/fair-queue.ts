/** Scheduling policy of a job, from its spec. */
export interface JobPolicy {
  /** Share of contended capacity relative to other jobs of the same priority. @default 1 */
  weight: number;
  /** Higher priorities are admitted first. @default 0 */
  priority: number;
  /** Max live activations of the job across the cluster. @default unlimited */
  maxActivations?: number;
}

/** The policy used for activations that name no job, or a job without a spec. */
export const DEFAULT_JOB_POLICY: JobPolicy = { weight: 1, priority: 0 };

interface Flow<T> {
  items: T[];
  /** Virtual finish time of the flow's last admission (weighted fair queueing). */
  vtime: number;
}

/**
 * A weighted fair queue across jobs: among the jobs of the highest priority with waiting items,
 * the one with the smallest virtual time goes next, and each admission advances its job's
 * virtual time by `1 / weight`. Over any busy period, admissions are shared in proportion to the
 * weights; an idle job does not bank credit (its virtual time is lifted to the current minimum
 * when it becomes active again).
 */
export class FairQueue<T> {
  private readonly flows = new Map<string, Flow<T>>();
  private virtualNow = 0;

  constructor(private readonly policyOf: (jobId: string) => JobPolicy) {}

  /** Number of waiting items. */
  get size(): number {
    let n = 0;
    for (const f of this.flows.values()) n += f.items.length;
    return n;
  }

  /** Waiting items per job. */
  depthByJob(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [job, f] of this.flows) if (f.items.length > 0) out[job] = f.items.length;
    return out;
  }

  /** Adds an item at the end of its job's queue. */
  push(jobId: string, item: T): void {
    let flow = this.flows.get(jobId);
    if (!flow) {
      flow = { items: [], vtime: this.virtualNow };
      this.flows.set(jobId, flow);
    }
    if (flow.items.length === 0) flow.vtime = Math.max(flow.vtime, this.virtualNow);
    flow.items.push(item);
  }

  /** Removes a specific item (e.g. its deadline passed). */
  remove(jobId: string, item: T): boolean {
    const flow = this.flows.get(jobId);
    if (!flow) return false;
    const i = flow.items.indexOf(item);
    if (i < 0) return false;
    flow.items.splice(i, 1);
    return true;
  }

  /**
   * Takes the next item whose job is eligible (`eligible(jobId)` false skips a job at its limit)
   * and for which `admit(item)` succeeds; returns it, or undefined when none can be admitted now.
   * Only the head of each job's queue is tried, so a job's items keep their order.
   */
  admitNext(
    admit: (item: T) => boolean,
    eligible: (jobId: string) => boolean = () => true,
  ): T | undefined {
    const candidates = [...this.flows.entries()]
      .filter(([job, f]) => f.items.length > 0 && eligible(job))
      .map(([job, f]) => ({ job, f, policy: this.policyOf(job) }))
      .sort(
        (a, b) =>
          b.policy.priority - a.policy.priority ||
          a.f.vtime - b.f.vtime ||
          (a.job < b.job ? -1 : 1),
      );
    for (const { f, policy } of candidates) {
      const head = f.items[0] as T;
      if (!admit(head)) continue;
      f.items.shift();
      this.virtualNow = Math.max(this.virtualNow, f.vtime);
      f.vtime += 1 / Math.max(policy.weight, 1e-6);
      return head;
    }
    return undefined;
  }
}
