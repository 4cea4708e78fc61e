import { type JobEvent__Output } from '@troupe/proto';

/** What a watcher knows about a job from its events so far. */
export interface JobProgressView {
  total: number;
  done: number;
  passed: number;
  failed: number;
  errored: number;
  running: number;
  /** passed / done; undefined before the first task finished. */
  passRate?: number;
  spendUsd: number;
  /** Estimated time left (from the finishing rate so far); undefined until it can be told. */
  etaMs?: number;
  /** The final state, once JOB_FINISHED arrived. */
  finalState?: string;
  finalReason?: string;
}

function payloadOf(e: JobEvent__Output): Record<string, unknown> {
  if (!e.payloadJson) return {};
  try {
    const v: unknown = JSON.parse(e.payloadJson);
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * Folds a job's events into progress counters (done/total, pass rate, spend, ETA) for the watch
 * display. Each task counts once, at its final event.
 */
export class ProgressTracker {
  private total = 0;
  private readonly final = new Map<string, string>();
  private readonly running = new Set<string>();
  private spendUsd = 0;
  private startedAtMs?: number;
  private lastAtMs?: number;
  private finalState?: string;
  private finalReason?: string;

  /** Takes one event. */
  add(e: JobEvent__Output): void {
    const p = payloadOf(e);
    this.lastAtMs = e.timeUnixMs;
    switch (e.type) {
      case 'JOB_STARTED':
        if (typeof p['total'] === 'number') this.total = p['total'];
        this.startedAtMs = e.timeUnixMs;
        break;
      case 'JOB_RESUMED':
        for (const [id, status] of this.final) {
          if (status === 'ERRORED' || status === 'CANCELLED') this.final.delete(id);
        }
        break;
      case 'TASK_STARTED':
        this.running.add(e.taskId);
        break;
      case 'TASK_RETRY':
        this.running.delete(e.taskId);
        break;
      case 'TASK_GRADED':
      case 'TASK_FINISHED':
        this.running.delete(e.taskId);
        this.final.set(e.taskId, typeof p['status'] === 'string' ? p['status'] : 'UNKNOWN');
        break;
      case 'BUDGET':
        if (typeof p['spentUsd'] === 'number') this.spendUsd = p['spentUsd'];
        break;
      case 'JOB_FINISHED': {
        this.finalState = typeof p['state'] === 'string' ? p['state'] : undefined;
        this.finalReason = typeof p['reason'] === 'string' ? p['reason'] : undefined;
        const agg = p['aggregate'] as Record<string, unknown> | undefined;
        if (agg && typeof agg['total'] === 'number') this.total = agg['total'];
        if (agg && typeof agg['costUsd'] === 'number') this.spendUsd = agg['costUsd'];
        this.running.clear();
        break;
      }
      default:
        break;
    }
  }

  /** The current view. */
  view(nowMs = Date.now()): JobProgressView {
    let passed = 0;
    let failed = 0;
    let errored = 0;
    for (const s of this.final.values()) {
      if (s === 'PASSED') passed++;
      else if (s === 'FAILED' || s === 'TIMED_OUT') failed++;
      else errored++;
    }
    const done = this.final.size;
    const v: JobProgressView = {
      total: Math.max(this.total, done),
      done,
      passed,
      failed,
      errored,
      running: this.running.size,
      spendUsd: this.spendUsd,
      ...(done > 0 ? { passRate: passed / done } : {}),
      ...(this.finalState !== undefined ? { finalState: this.finalState } : {}),
      ...(this.finalReason ? { finalReason: this.finalReason } : {}),
    };
    if (this.startedAtMs !== undefined && done > 0 && done < v.total && !this.finalState) {
      const elapsed = Math.max(nowMs, this.lastAtMs ?? nowMs) - this.startedAtMs;
      v.etaMs = Math.round((elapsed / done) * (v.total - done));
    }
    return v;
  }
}
