import { z } from 'zod';
import { jobDisplayName } from './job-spec';
import { countTasks, type JobState } from './job-state';

/** The wire job states a record can be in. */
export const RecordPhaseSchema = z.enum(['QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED']);

/** Aggregate over every task of a job (the wire `JobAggregate`). */
export const JobAggregateRecordSchema = z.object({
  total: z.number().int(),
  passed: z.number().int(),
  failed: z.number().int(),
  errored: z.number().int(),
  timedOut: z.number().int(),
  cancelled: z.number().int(),
  pending: z.number().int(),
  /** passed / (total - pending); absent while no task has finished. */
  passRate: z.number().optional(),
  costUsd: z.number(),
  promptTokens: z.number().int(),
  completionTokens: z.number().int(),
  wallMs: z.number().int(),
  extra: z.record(z.string(), z.unknown()).optional(),
});
/** A job aggregate. */
export type JobAggregateRecord = z.output<typeof JobAggregateRecordSchema>;

/** What the jobs KV bucket holds per job (`job.<jobId>`): the index GetJob and ListJobs read. */
export const JobRecordSchema = z.object({
  jobId: z.string(),
  name: z.string(),
  kind: z.string(),
  state: RecordPhaseSchema,
  reason: z.string(),
  /** Cancellation was requested and the job has not finished yet. */
  cancelRequested: z.boolean().optional(),
  labels: z.record(z.string(), z.string()),
  createdUnixMs: z.number().int(),
  startedUnixMs: z.number().int().optional(),
  finishedUnixMs: z.number().int().optional(),
  progress: z.object({
    total: z.number().int(),
    done: z.number().int(),
    passed: z.number().int(),
    failed: z.number().int(),
    running: z.number().int(),
    costUsd: z.number(),
  }),
  /** The validated spec as JSON. */
  specJson: z.string(),
  /** Scheduling policy (placement's fair queue). */
  priority: z.number().int(),
  weight: z.number(),
  aggregate: JobAggregateRecordSchema.optional(),
});
/** A job record. */
export type JobRecord = z.output<typeof JobRecordSchema>;

/** The full result of one task attempt, written by its task actor (`result.<jobId>.<index>`). */
export const TaskResultRecordSchema = z.object({
  taskId: z.string(),
  index: z.number().int(),
  attempt: z.number().int(),
  /**
   * Which execution of the attempt wrote it (1, 2, … : an execution interrupted by a fault is
   * replayed by the next), or {@link JOB_DECIDED_EXECUTION} for an attempt the job ended without
   * it starting. Absent in records of earlier versions: taken as 0.
   */
  execution: z.number().int().nonnegative().optional(),
  status: z.string(),
  score: z.number().optional(),
  costUsd: z.number(),
  tokens: z.number().int(),
  durationMs: z.number().int(),
  stopReason: z.string(),
  error: z.string(),
  artifacts: z.array(z.string()),
  details: z.record(z.string(), z.unknown()).optional(),
});
/** A task result record. */
export type TaskResultRecord = z.output<typeof TaskResultRecordSchema>;

/**
 * The `execution` of a result record the job actor writes for an attempt it ended because it
 * never started (its start deadline): the job's decision is final for that attempt, so no late
 * execution of it replaces the record.
 */
export const JOB_DECIDED_EXECUTION = Number.MAX_SAFE_INTEGER;

/**
 * True when `stored` is of a later attempt than `incoming`, or of a later execution of the same
 * attempt: what the job keeps as the task's outcome, so `incoming` must not replace it.
 */
export function supersedes(stored: TaskResultRecord, incoming: TaskResultRecord): boolean {
  if (stored.attempt !== incoming.attempt) return stored.attempt > incoming.attempt;
  return (stored.execution ?? 0) > (incoming.execution ?? 0);
}

/** The aggregate of a job's state at `now`. */
export function aggregateOf(s: JobState, now: number): JobAggregateRecord {
  const c = countTasks(s);
  const started = s.startedUnixMs;
  const end = s.finishedUnixMs ?? now;
  return {
    total: c.total,
    passed: c.passed,
    failed: c.failed,
    errored: c.errored,
    timedOut: c.timedOut,
    cancelled: c.cancelled,
    pending: c.pending,
    ...(c.done > 0 ? { passRate: c.passed / c.done } : {}),
    costUsd: c.costUsd,
    promptTokens: c.promptTokens,
    completionTokens: c.completionTokens,
    wallMs: started === undefined ? 0 : Math.max(0, end - started),
    ...(s.extra ? { extra: s.extra } : {}),
  };
}

/** The KV record of a job actor's state (the state must have its spec). */
export function recordOf(s: JobState, now: number): JobRecord {
  const spec = s.spec;
  if (!spec) throw new Error(`job ${s.jobId} has no spec yet`);
  const c = countTasks(s);
  const state = s.phase === 'NEW' ? 'QUEUED' : s.phase;
  return {
    jobId: s.jobId,
    name: jobDisplayName(spec),
    kind: spec.kind,
    state,
    reason: s.reason || (s.cancel && state === 'RUNNING' ? `cancelling: ${s.cancel.reason}` : ''),
    ...(s.cancel && state === 'RUNNING' ? { cancelRequested: true } : {}),
    labels: spec.labels,
    createdUnixMs: s.createdUnixMs,
    ...(s.startedUnixMs !== undefined ? { startedUnixMs: s.startedUnixMs } : {}),
    ...(s.finishedUnixMs !== undefined ? { finishedUnixMs: s.finishedUnixMs } : {}),
    progress: {
      total: c.total,
      done: c.done,
      passed: c.passed,
      failed: c.failed,
      running: c.running,
      costUsd: c.costUsd,
    },
    specJson: JSON.stringify(spec),
    priority: spec.priority,
    weight: spec.weight,
    ...(state === 'SUCCEEDED' || state === 'FAILED' || state === 'CANCELLED'
      ? { aggregate: aggregateOf(s, now) }
      : {}),
  };
}
