import type { JobEvent__Output, JobResults__Output } from '@troupe/proto';
import type { DirectoryRecord, ExecRecord } from './cluster-observer';

/** A job event as the harness's watcher received it. */
export interface ReceivedEvent {
  readonly event: JobEvent__Output;
  readonly receivedAtMs: number;
}

/** What the watcher saw of one job. */
export interface WatchRecord {
  readonly events: readonly ReceivedEvent[];
  /** When JOB_FINISHED arrived. */
  readonly finishedAtMs?: number;
  /** When the watch iterator ended by itself. */
  readonly endedAtMs?: number;
  /** Why it failed, when it did. */
  readonly error?: string;
}

/**
 * Every task graded exactly once: one TASK_GRADED event and no TASK_FINISHED (a task ends with
 * a grade or without one, never both, never twice), and the results list each task once,
 * passed (every chaos task's command exits 0, so any other status is an infrastructure failure
 * the faults leaked into a grade). Retries are allowed; grades are not repeated.
 */
export function checkGradedOnce(
  taskIds: readonly string[],
  watch: WatchRecord,
  results: JobResults__Output | undefined,
): string[] {
  const violations: string[] = [];
  const count = (type: string, taskId: string) =>
    watch.events.filter((r) => r.event.type === type && r.event.taskId === taskId).length;
  for (const id of taskIds) {
    const graded = count('TASK_GRADED', id);
    const finished = count('TASK_FINISHED', id);
    if (graded !== 1 || finished !== 0) {
      violations.push(`task ${id}: ${graded} TASK_GRADED and ${finished} TASK_FINISHED events`);
    }
  }
  if (!results) return [...violations, 'no results'];
  for (const id of taskIds) {
    const rows = results.tasks.filter((t) => t.taskId === id);
    if (rows.length !== 1) violations.push(`task ${id}: ${rows.length} result rows`);
    else if (rows[0]?.status !== 'TASK_PASSED') {
      // Its details (exit code, output tails) say why a graded task failed.
      const why = rows[0]?.error || rows[0]?.detailsJson || '';
      violations.push(
        `task ${id}: result ${rows[0]?.status} after ${rows[0]?.attempts} attempts (${why})`,
      );
    }
  }
  if (results.tasks.length !== taskIds.length) {
    violations.push(`${results.tasks.length} result rows for ${taskIds.length} tasks`);
  }
  return violations;
}

/** Event types that happen once per job, or once per task. */
const ONCE_PER_JOB = new Set(['JOB_FINISHED', 'JOB_STARTED', 'JOB_QUEUED']);
const ONCE_PER_TASK = new Set(['TASK_GRADED', 'TASK_FINISHED']);

/**
 * No lost or duplicated job events for a watcher that stayed connected through every fault:
 * sequences 1, 2, 3… with no gap or repeat; no once-only event twice (JOB_STARTED may recur only
 * as JOB_RESUMED); JOB_FINISHED last; and the watch ended by itself once the job ended.
 */
export function checkEventLog(watch: WatchRecord, endDeadlineMs: number): string[] {
  const violations: string[] = [];
  if (watch.error !== undefined) violations.push(`watcher failed: ${watch.error}`);
  watch.events.forEach((r, i) => {
    if (Number(r.event.sequence) !== i + 1) {
      violations.push(`event #${i + 1} has sequence ${r.event.sequence} (lost or repeated)`);
    }
  });
  const seen = new Map<string, number>();
  for (const { event } of watch.events) {
    const key = ONCE_PER_JOB.has(event.type)
      ? event.type
      : ONCE_PER_TASK.has(event.type)
        ? `${event.type} ${event.taskId}`
        : undefined;
    if (key !== undefined) seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  for (const [key, n] of seen) if (n > 1) violations.push(`${key} delivered ${n} times`);
  const last = watch.events.at(-1)?.event.type;
  if (last !== 'JOB_FINISHED') violations.push(`last event ${last ?? 'none'}, not JOB_FINISHED`);
  if (watch.finishedAtMs !== undefined) {
    if (watch.endedAtMs === undefined) {
      violations.push(`watcher did not end within ${endDeadlineMs} ms of JOB_FINISHED`);
    }
  }
  return violations;
}

/**
 * No task command that had finished ran again: for each task's marker, no `exec_start` of a
 * command carrying it after an `exec_die` with exit code 0 of one (Docker's exec events).
 * Also returns how many times each marker was executed.
 */
export function checkExecutions(
  markers: ReadonlyMap<string, string>,
  execs: readonly ExecRecord[],
): { violations: string[]; executions: Map<string, number> } {
  const violations: string[] = [];
  const executions = new Map<string, number>();
  const markerOfExec = new Map<string, string>();
  const finished = new Set<string>();
  for (const e of execs) {
    if (e.action === 'exec_start') {
      const taskId = [...markers].find(([, marker]) => e.command?.includes(marker))?.[0];
      if (taskId === undefined) continue;
      markerOfExec.set(e.execId, taskId);
      executions.set(taskId, (executions.get(taskId) ?? 0) + 1);
      if (finished.has(taskId))
        violations.push(`task ${taskId}: its command ran again after it finished`);
    } else {
      const taskId = markerOfExec.get(e.execId);
      if (taskId !== undefined && e.exitCode === 0) finished.add(taskId);
    }
  }
  for (const id of markers.keys()) {
    if (!executions.has(id)) violations.push(`task ${id}: Docker reported no execution`);
  }
  return { violations, executions };
}

const LIVE = new Set(['ACTIVATING', 'IDLE', 'RUNNING']);

/**
 * No actor ever had two live activations, from the directory: an epoch (fencing token) never
 * belongs to two different host incarnations while live, and an actor's epoch never goes back.
 */
export function checkSingleActivation(records: readonly DirectoryRecord[]): string[] {
  const violations: string[] = [];
  const holders = new Map<string, { hostId: string; incarnation?: string | undefined }>();
  const lastEpoch = new Map<string, number>();
  for (const r of records) {
    const prev = lastEpoch.get(r.key);
    if (prev !== undefined && r.epoch < prev) {
      violations.push(`${r.key}: epoch went back from ${prev} to ${r.epoch}`);
    }
    lastEpoch.set(r.key, Math.max(prev ?? 0, r.epoch));
    if (!LIVE.has(r.state) || r.hostId === undefined) continue;
    const slot = `${r.key}@${r.epoch}`;
    const had = holders.get(slot);
    // The coordinator may write ACTIVATING before the host's incarnation is known.
    const differs =
      had !== undefined &&
      (had.hostId !== r.hostId ||
        (had.incarnation !== undefined &&
          r.incarnation !== undefined &&
          had.incarnation !== r.incarnation));
    if (had && differs) {
      violations.push(
        `${r.key}: epoch ${r.epoch} live on ${had.hostId}/${had.incarnation ?? '?'} and on ${r.hostId}/${r.incarnation ?? '?'}`,
      );
    }
    holders.set(slot, {
      hostId: r.hostId,
      ...((r.incarnation ?? had?.incarnation) !== undefined
        ? { incarnation: r.incarnation ?? had?.incarnation }
        : {}),
    });
  }
  return violations;
}
