import { z } from 'zod';
import { type JobEventDraft } from './job-event';
import { type JobSpec, JobSpecSchema } from './job-spec';

// The job actor's state and its transitions, as pure functions: every transition takes the
// state, returns the next one and the effects to carry out (events to append, tasks to dispatch,
// retries to schedule). The actor runs the effects, all idempotent, then commits the state, so a
// crash between the two replays the same effects harmlessly.

/** Lifecycle of a job (the wire `JobState`, plus NEW before the spec arrived). */
export const JobPhase = {
  NEW: 'NEW',
  QUEUED: 'QUEUED',
  RUNNING: 'RUNNING',
  SUCCEEDED: 'SUCCEEDED',
  FAILED: 'FAILED',
  CANCELLED: 'CANCELLED',
} as const;
/** One of {@link JobPhase}. */
export type JobPhase = (typeof JobPhase)[keyof typeof JobPhase];

/** Whether a job in `phase` has finished. */
export function isFinalPhase(phase: JobPhase): boolean {
  return phase === 'SUCCEEDED' || phase === 'FAILED' || phase === 'CANCELLED';
}

/**
 * Status of one task inside the job actor. PENDING waits for a slot, BACKOFF for its retry time,
 * QUEUED was dispatched to its task actor, RUNNING has started there; the rest are final.
 */
export const TaskPhase = {
  PENDING: 'PENDING',
  BACKOFF: 'BACKOFF',
  QUEUED: 'QUEUED',
  RUNNING: 'RUNNING',
  PASSED: 'PASSED',
  FAILED: 'FAILED',
  ERRORED: 'ERRORED',
  TIMED_OUT: 'TIMED_OUT',
  CANCELLED: 'CANCELLED',
} as const;
/** One of {@link TaskPhase}. */
export type TaskPhase = (typeof TaskPhase)[keyof typeof TaskPhase];

const FINAL_TASK_PHASES: ReadonlySet<TaskPhase> = new Set<TaskPhase>([
  'PASSED',
  'FAILED',
  'ERRORED',
  'TIMED_OUT',
  'CANCELLED',
]);

/** Whether a task in `phase` has finished. */
export function isFinalTaskPhase(phase: TaskPhase): boolean {
  return FINAL_TASK_PHASES.has(phase);
}

/** Whether a task in `phase` holds one of the job's concurrency slots. */
export function holdsSlot(phase: TaskPhase): boolean {
  return phase === 'QUEUED' || phase === 'RUNNING';
}

/** One task as the job actor tracks it (compact: the job's whole table is rewritten per turn). */
export const TaskEntrySchema = z.object({
  id: z.string(),
  status: z.enum(TaskPhase),
  /** Attempts dispatched so far. */
  attempts: z.number().int().nonnegative(),
  score: z.number().optional(),
  costUsd: z.number().nonnegative(),
  promptTokens: z.number().int().nonnegative(),
  completionTokens: z.number().int().nonnegative(),
  durationMs: z.number().int().nonnegative(),
  stopReason: z.string().optional(),
  /** Error of the last failed attempt (truncated). */
  error: z.string().optional(),
  /** When a BACKOFF task may be dispatched again (Unix ms). */
  retryAtMs: z.number().int().optional(),
  /** Host of the current or last attempt. */
  hostId: z.string().optional(),
  /** Times the current attempt started executing (more than 1 after a crash replay). */
  executions: z.number().int().nonnegative().default(0),
});
/** A task entry. */
export type TaskEntry = z.output<typeof TaskEntrySchema>;

/** The job actor's persisted state. */
export const JobStateSchema = z.object({
  jobId: z.string(),
  phase: z.enum(JobPhase),
  reason: z.string(),
  spec: JobSpecSchema.optional(),
  createdUnixMs: z.number().int(),
  startedUnixMs: z.number().int().optional(),
  finishedUnixMs: z.number().int().optional(),
  /** Sequence number the next event gets. */
  nextSequence: z.number().int().positive(),
  tasks: z.array(TaskEntrySchema),
  cancel: z.object({ reason: z.string(), requestedUnixMs: z.number().int() }).optional(),
  /** Benchmark-specific aggregate metrics from the driver's `collect`. */
  extra: z.record(z.string(), z.unknown()).optional(),
});
/** The job actor's state. */
export type JobState = z.output<typeof JobStateSchema>;

/** A job actor that has not received its spec yet. */
export function emptyJobState(jobId: string): JobState {
  return {
    jobId,
    phase: 'NEW',
    reason: '',
    createdUnixMs: 0,
    nextSequence: 1,
    tasks: [],
  };
}

/** What a transition asks the actor to do (all idempotent). */
export interface JobEffects {
  /** Events to append, in order (numbered by {@link numberEvents}). */
  events: JobEventDraft[];
  /** Tasks (plan indices) to post a `run` to, with their attempt number. */
  dispatch: { index: number; attempt: number }[];
  /** Retries to wake the actor for. */
  retries: { index: number; attempt: number; atMs: number }[];
  /** The job record (KV index) must be rewritten. */
  recordChanged: boolean;
  /** The job reached a final phase in this transition. */
  finished: boolean;
}

function noEffects(): JobEffects {
  return { events: [], dispatch: [], retries: [], recordChanged: false, finished: false };
}

/** Counters over the task table. */
export interface TaskCounts {
  total: number;
  pending: number;
  running: number;
  passed: number;
  failed: number;
  errored: number;
  timedOut: number;
  cancelled: number;
  done: number;
  costUsd: number;
  promptTokens: number;
  completionTokens: number;
}

/** Counts tasks by status and sums their spend. */
export function countTasks(tasks: readonly TaskEntry[]): TaskCounts {
  const c: TaskCounts = {
    total: tasks.length,
    pending: 0,
    running: 0,
    passed: 0,
    failed: 0,
    errored: 0,
    timedOut: 0,
    cancelled: 0,
    done: 0,
    costUsd: 0,
    promptTokens: 0,
    completionTokens: 0,
  };
  for (const t of tasks) {
    c.costUsd += t.costUsd;
    c.promptTokens += t.promptTokens;
    c.completionTokens += t.completionTokens;
    switch (t.status) {
      case 'PASSED':
        c.passed++;
        break;
      case 'FAILED':
        c.failed++;
        break;
      case 'ERRORED':
        c.errored++;
        break;
      case 'TIMED_OUT':
        c.timedOut++;
        break;
      case 'CANCELLED':
        c.cancelled++;
        break;
      case 'RUNNING':
      case 'QUEUED':
        c.running++;
        c.pending++;
        break;
      default:
        c.pending++;
    }
  }
  c.done = c.total - c.pending;
  return c;
}

/** The outcome a task actor reports for one attempt. */
export const TaskOutcomeSchema = z.object({
  index: z.number().int().nonnegative(),
  attempt: z.number().int().positive(),
  /** PASSED/FAILED/TIMED_OUT (graded), ERRORED (not gradable), CANCELLED. */
  status: z.enum(['PASSED', 'FAILED', 'TIMED_OUT', 'ERRORED', 'CANCELLED']),
  /** For ERRORED: whether the failure was infrastructure (retried). */
  infrastructure: z.boolean().default(false),
  /** For ERRORED: whether the budget ran out (stops the job). */
  budgetExhausted: z.boolean().default(false),
  score: z.number().optional(),
  error: z.string().optional(),
  stopReason: z.string().optional(),
  costUsd: z.number().nonnegative().default(0),
  promptTokens: z.number().int().nonnegative().default(0),
  completionTokens: z.number().int().nonnegative().default(0),
  durationMs: z.number().int().nonnegative().default(0),
  hostId: z.string().optional(),
  executions: z.number().int().nonnegative().default(1),
});
/** A task attempt's outcome. */
export type TaskOutcome = z.output<typeof TaskOutcomeSchema>;

// Kept short: the task table is one state record (the full error is in the task's result).
const MAX_ERROR_CHARS = 200;

function truncate(text: string, max = MAX_ERROR_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function clone(state: JobState): JobState {
  return { ...state, tasks: state.tasks.map((t) => ({ ...t })) };
}

/** Backoff before retry number `retry` (1 for the first): doubling from `backoffMs`, capped. */
export function retryDelayMs(spec: JobSpec, retry: number): number {
  const { backoffMs, maxBackoffMs } = spec.retries;
  return Math.min(maxBackoffMs, backoffMs * 2 ** Math.max(0, retry - 1));
}

/** Transitions of one job. Each method returns the next state and its effects. */
export const JobTransitions = {
  /**
   * The spec and the plan arrived: the job is QUEUED, then RUNNING with the first tasks
   * dispatched (or finished at once when the plan is empty). A plan that failed ends the job
   * FAILED with `planError`.
   */
  start(
    prev: JobState,
    input: {
      spec: JobSpec;
      createdUnixMs: number;
      taskIds: readonly string[] | undefined;
      planError?: string;
      now: number;
    },
  ): { state: JobState; effects: JobEffects } {
    const s = clone(prev);
    const fx = noEffects();
    s.spec = input.spec;
    s.createdUnixMs = input.createdUnixMs;
    s.phase = 'QUEUED';
    fx.recordChanged = true;
    fx.events.push({
      type: 'JOB_QUEUED',
      taskId: '',
      message: `job ${s.jobId} queued (${input.spec.kind})`,
      payload: { kind: input.spec.kind, name: input.spec.name ?? input.spec.kind },
    });
    if (input.planError !== undefined || input.taskIds === undefined) {
      finish(s, fx, 'FAILED', `planning failed: ${input.planError ?? 'no plan'}`, input.now);
      return { state: s, effects: fx };
    }
    s.tasks = input.taskIds.map((id) => ({
      id,
      status: 'PENDING',
      attempts: 0,
      costUsd: 0,
      promptTokens: 0,
      completionTokens: 0,
      durationMs: 0,
      executions: 0,
    }));
    s.phase = 'RUNNING';
    s.startedUnixMs = input.now;
    fx.events.push({
      type: 'JOB_STARTED',
      taskId: '',
      message: `job ${s.jobId} started: ${s.tasks.length} tasks, concurrency ${input.spec.concurrency}`,
      payload: { total: s.tasks.length, concurrency: input.spec.concurrency },
    });
    fill(s, fx);
    maybeFinish(s, fx, input.now);
    return { state: s, effects: fx };
  },

  /** A task actor began executing an attempt. */
  started(
    prev: JobState,
    msg: { index: number; attempt: number; hostId: string; executions: number },
    now: number,
  ): { state: JobState; effects: JobEffects } {
    const s = clone(prev);
    const fx = noEffects();
    const t = s.tasks[msg.index];
    if (!t || t.attempts !== msg.attempt || !holdsSlot(t.status))
      return { state: prev, effects: fx };
    t.status = 'RUNNING';
    t.hostId = msg.hostId;
    t.executions = msg.executions;
    // The record's counters do not change (QUEUED and RUNNING both count as running).
    fx.events.push({
      type: 'TASK_STARTED',
      taskId: t.id,
      message: `task ${t.id} attempt ${msg.attempt} started on ${msg.hostId}${msg.executions > 1 ? ` (re-executed after an interruption)` : ''}`,
      payload: { attempt: msg.attempt, host: msg.hostId, execution: msg.executions },
      timeUnixMs: now,
    });
    return { state: s, effects: fx };
  },

  /** A task attempt ended. Infrastructure failures are retried with backoff, nothing else is. */
  outcome(prev: JobState, o: TaskOutcome, now: number): { state: JobState; effects: JobEffects } {
    const s = clone(prev);
    const fx = noEffects();
    const t = s.tasks[o.index];
    const spec = s.spec;
    // Stale (an earlier attempt, a duplicate delivery) or unknown: nothing to do. So is the
    // outcome of an execution older than the latest that started: a task actor's activation
    // fenced while its host was unreachable keeps running until it learns so, and its outcome
    // (often an error from the sandbox the new execution replaced) must not become the task's.
    if (
      !t ||
      !spec ||
      t.attempts !== o.attempt ||
      !holdsSlot(t.status) ||
      o.executions < t.executions
    ) {
      return { state: prev, effects: fx };
    }
    t.costUsd += o.costUsd;
    t.promptTokens += o.promptTokens;
    t.completionTokens += o.completionTokens;
    t.durationMs = o.durationMs;
    t.executions = o.executions;
    if (o.hostId !== undefined) t.hostId = o.hostId;
    if (o.stopReason !== undefined) t.stopReason = o.stopReason;
    fx.recordChanged = true;
    // The task's error is its last failed attempt's (the TaskResult contract): a retry that
    // ends graded keeps the earlier attempt's text, so a result says what it survived.
    if (o.error !== undefined) t.error = truncate(o.error);
    const cancelling = s.cancel !== undefined;
    if (
      o.status === 'ERRORED' &&
      o.infrastructure &&
      !o.budgetExhausted &&
      !cancelling &&
      t.attempts <= spec.retries.max
    ) {
      const atMs = now + retryDelayMs(spec, t.attempts);
      t.status = 'BACKOFF';
      t.retryAtMs = atMs;
      fx.retries.push({ index: o.index, attempt: t.attempts + 1, atMs });
      fx.events.push({
        type: 'TASK_RETRY',
        taskId: t.id,
        message: `task ${t.id} attempt ${o.attempt} failed on infrastructure, retrying in ${atMs - now} ms: ${truncate(o.error ?? 'unknown error', 200)}`,
        payload: {
          attempt: o.attempt,
          nextAttempt: t.attempts + 1,
          retryAtMs: atMs,
          error: t.error,
        },
      });
    } else {
      const status = cancelling && o.status === 'ERRORED' ? 'CANCELLED' : o.status;
      t.status = status;
      if (o.score !== undefined) t.score = o.score;
      else delete t.score;
      const graded = status === 'PASSED' || status === 'FAILED' || status === 'TIMED_OUT';
      if (graded) {
        fx.events.push({
          type: 'TASK_GRADED',
          taskId: t.id,
          message: `task ${t.id} ${status.toLowerCase().replace('_', ' ')}${o.score !== undefined ? ` (score ${o.score})` : ''}`,
          payload: {
            status,
            ...(o.score !== undefined ? { score: o.score } : {}),
            attempt: o.attempt,
            durationMs: o.durationMs,
          },
        });
      } else {
        fx.events.push({
          type: 'TASK_FINISHED',
          taskId: t.id,
          message: `task ${t.id} ${status.toLowerCase()}${t.error ? `: ${truncate(t.error, 200)}` : ''}`,
          payload: { status, attempt: o.attempt, ...(t.error ? { error: t.error } : {}) },
        });
      }
    }
    if (o.costUsd > 0 || o.promptTokens > 0 || o.completionTokens > 0) {
      const c = countTasks(s.tasks);
      fx.events.push({
        type: 'BUDGET',
        taskId: '',
        message: `spent $${c.costUsd.toFixed(4)}${spec.budget?.usd !== undefined ? ` of $${spec.budget.usd}` : ''}`,
        payload: {
          spentUsd: c.costUsd,
          tokens: c.promptTokens + c.completionTokens,
          ...(spec.budget?.usd !== undefined ? { limitUsd: spec.budget.usd } : {}),
          ...(spec.budget?.tokens !== undefined ? { limitTokens: spec.budget.tokens } : {}),
        },
      });
    }
    if (!isFinalPhase(s.phase) && (o.budgetExhausted || budgetSpent(s))) {
      stopPending(s, fx, 'ERRORED', 'not run: the job budget is exhausted');
      if (countTasks(s.tasks).running === 0) {
        finish(s, fx, 'FAILED', budgetReason(s), now);
      } else if (!s.reason) {
        s.reason = budgetReason(s);
      }
    }
    fill(s, fx);
    maybeFinish(s, fx, now);
    return { state: s, effects: fx };
  },

  /**
   * The start deadline of a dispatched attempt (`taskTimeoutMs` after its dispatch) passed. An
   * attempt whose task actor never reported `started` — its `run` was never delivered, or its
   * actor could not be activated — ends TIMED_OUT, so the job does not wait for it forever. An
   * attempt that started is left to its task actor, which enforces the timeout itself.
   */
  startDeadline(
    prev: JobState,
    msg: { index: number; attempt: number; timeoutMs: number },
    now: number,
  ): { state: JobState; effects: JobEffects } {
    const t = prev.tasks[msg.index];
    if (!t || t.attempts !== msg.attempt || t.status !== 'QUEUED') {
      return { state: prev, effects: noEffects() };
    }
    return JobTransitions.outcome(
      prev,
      {
        index: msg.index,
        attempt: msg.attempt,
        status: 'TIMED_OUT',
        infrastructure: false,
        budgetExhausted: false,
        error: `task ${t.id} attempt ${msg.attempt}: its task actor did not start within taskTimeoutMs (${msg.timeoutMs} ms)`,
        stopReason: 'timeout',
        costUsd: 0,
        promptTokens: 0,
        completionTokens: 0,
        durationMs: msg.timeoutMs,
        executions: 0,
      },
      now,
    );
  },

  /** A retry's backoff is over: the task becomes dispatchable again. */
  retryDue(
    prev: JobState,
    msg: { index: number; attempt: number },
    now: number,
  ): { state: JobState; effects: JobEffects } {
    const t = prev.tasks[msg.index];
    if (!t || t.status !== 'BACKOFF' || t.attempts + 1 !== msg.attempt) {
      return { state: prev, effects: noEffects() };
    }
    const s = clone(prev);
    const fx = noEffects();
    const task = s.tasks[msg.index] as TaskEntry;
    task.status = 'PENDING';
    delete task.retryAtMs;
    fill(s, fx);
    maybeFinish(s, fx, now);
    return { state: s, effects: fx };
  },

  /**
   * Cancellation: pending tasks end CANCELLED at once; running ones are told (through the
   * JOB_CANCEL_REQUESTED event their task actors watch) and report CANCELLED; the job finishes
   * CANCELLED when none is left running. A finished job is left as it is.
   */
  cancel(
    prev: JobState,
    msg: { reason: string },
    now: number,
  ): { state: JobState; effects: JobEffects } {
    if (isFinalPhase(prev.phase) || prev.cancel) return { state: prev, effects: noEffects() };
    const s = clone(prev);
    const fx = noEffects();
    s.cancel = { reason: msg.reason, requestedUnixMs: now };
    fx.recordChanged = true;
    fx.events.push({
      type: 'JOB_CANCEL_REQUESTED',
      taskId: '',
      message: `cancellation requested: ${msg.reason}`,
      payload: { reason: msg.reason },
    });
    stopPending(s, fx, 'CANCELLED', `cancelled: ${msg.reason}`);
    maybeFinish(s, fx, now);
    return { state: s, effects: fx };
  },

  /**
   * Running tasks did not report within the cancellation grace period: they are recorded as
   * CANCELLED and the job finishes.
   */
  cancelDeadline(prev: JobState, now: number): { state: JobState; effects: JobEffects } {
    if (isFinalPhase(prev.phase) || !prev.cancel) return { state: prev, effects: noEffects() };
    const s = clone(prev);
    const fx = noEffects();
    for (const t of s.tasks) {
      if (holdsSlot(t.status)) {
        t.status = 'CANCELLED';
        t.error = 'cancelled: did not stop within the grace period';
        fx.events.push({
          type: 'TASK_FINISHED',
          taskId: t.id,
          message: `task ${t.id} cancelled (did not stop in time)`,
          payload: { status: 'CANCELLED', error: t.error },
        });
      }
    }
    maybeFinish(s, fx, now);
    return { state: s, effects: fx };
  },

  /**
   * Resubmission of a finished job (`resume_job_id`): tasks that ended ERRORED or CANCELLED (or
   * never ran) run again; graded ones keep their results.
   */
  resume(
    prev: JobState,
    msg: { spec: JobSpec },
    now: number,
  ): { state: JobState; effects: JobEffects } {
    const s = clone(prev);
    const fx = noEffects();
    if (!isFinalPhase(s.phase)) return { state: prev, effects: fx };
    s.spec = msg.spec;
    s.phase = 'RUNNING';
    s.reason = '';
    delete s.cancel;
    delete s.finishedUnixMs;
    delete s.extra;
    let again = 0;
    for (const t of s.tasks) {
      if (t.status === 'ERRORED' || t.status === 'CANCELLED' || !isFinalTaskPhase(t.status)) {
        t.status = 'PENDING';
        delete t.error;
        delete t.retryAtMs;
        again++;
      }
    }
    fx.recordChanged = true;
    fx.events.push({
      type: 'JOB_RESUMED',
      taskId: '',
      message: `job ${s.jobId} resumed: ${again} of ${s.tasks.length} tasks run again`,
      payload: { rerun: again, total: s.tasks.length },
    });
    fill(s, fx);
    maybeFinish(s, fx, now);
    return { state: s, effects: fx };
  },
};

function budgetSpent(s: JobState): boolean {
  const b = s.spec?.budget;
  if (!b) return false;
  const c = countTasks(s.tasks);
  return (
    (b.usd !== undefined && c.costUsd >= b.usd) ||
    (b.tokens !== undefined && c.promptTokens + c.completionTokens >= b.tokens)
  );
}

function budgetReason(s: JobState): string {
  const c = countTasks(s.tasks);
  const b = s.spec?.budget;
  return `budget exhausted: spent $${c.costUsd.toFixed(4)}${b?.usd !== undefined ? ` of $${b.usd}` : ''}, ${c.promptTokens + c.completionTokens} tokens${b?.tokens !== undefined ? ` of ${b.tokens}` : ''}`;
}

/** Ends every task that has not started (PENDING, BACKOFF) with `status`. */
function stopPending(
  s: JobState,
  fx: JobEffects,
  status: 'CANCELLED' | 'ERRORED',
  error: string,
): void {
  for (const t of s.tasks) {
    if (t.status === 'PENDING' || t.status === 'BACKOFF') {
      t.status = status;
      t.error = error;
      delete t.retryAtMs;
      fx.recordChanged = true;
      fx.events.push({
        type: 'TASK_FINISHED',
        taskId: t.id,
        message: `task ${t.id} ${status.toLowerCase()}: ${error}`,
        payload: { status, error },
      });
    }
  }
}

/** Dispatches PENDING tasks, in plan order, while the job has free concurrency slots. */
function fill(s: JobState, fx: JobEffects): void {
  if (s.phase !== 'RUNNING' || s.cancel || !s.spec) return;
  let free = s.spec.concurrency - countTasks(s.tasks).running;
  for (let i = 0; i < s.tasks.length && free > 0; i++) {
    const t = s.tasks[i] as TaskEntry;
    if (t.status !== 'PENDING') continue;
    t.status = 'QUEUED';
    t.attempts += 1;
    t.executions = 0;
    delete t.retryAtMs;
    free--;
    fx.recordChanged = true;
    fx.dispatch.push({ index: i, attempt: t.attempts });
    fx.events.push({
      type: 'TASK_QUEUED',
      taskId: t.id,
      message: `task ${t.id} attempt ${t.attempts} queued`,
      payload: { attempt: t.attempts },
    });
  }
}

/** Finishes the job when no task is left to run. */
function maybeFinish(s: JobState, fx: JobEffects, now: number): void {
  if (isFinalPhase(s.phase) || s.phase === 'NEW') return;
  const c = countTasks(s.tasks);
  if (c.pending > 0) return;
  if (s.cancel) {
    finish(s, fx, 'CANCELLED', s.cancel.reason, now);
  } else if (budgetSpent(s) || s.reason.startsWith('budget exhausted')) {
    finish(s, fx, 'FAILED', budgetReason(s), now);
  } else if (c.errored > 0) {
    const first = s.tasks.find((t) => t.status === 'ERRORED');
    finish(
      s,
      fx,
      'FAILED',
      `${c.errored} of ${c.total} tasks errored${first?.error ? ` (first: ${first.id}: ${truncate(first.error, 200)})` : ''}`,
      now,
    );
  } else {
    finish(s, fx, 'SUCCEEDED', '', now);
  }
}

function finish(s: JobState, fx: JobEffects, phase: JobPhase, reason: string, now: number): void {
  s.phase = phase;
  s.reason = reason;
  s.finishedUnixMs = now;
  fx.finished = true;
  fx.recordChanged = true;
  // JOB_FINISHED itself is appended by the actor once `collect` has run (it carries the aggregate).
}
