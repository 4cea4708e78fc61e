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

/**
 * One task the job actor is working on: taken from the work list and not finished (PENDING after
 * a retry's backoff, BACKOFF, QUEUED, RUNNING). A task that finishes leaves the job's state and
 * is written as a task record (`task.<jobId>.<index>`, {@link TaskRecordSchema}).
 */
export const TaskEntrySchema = z.object({
  /** Position of the task in the plan. */
  index: z.number().int().nonnegative(),
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
  /** When the current attempt was dispatched (Unix ms): its start deadline is this + timeout. */
  queuedAtMs: z.number().int().optional(),
  /** Host of the current or last attempt. */
  hostId: z.string().optional(),
  /** Times the current attempt started executing (more than 1 after a crash replay). */
  executions: z.number().int().nonnegative().default(0),
});
/** A task entry. */
export type TaskEntry = z.output<typeof TaskEntrySchema>;

/**
 * A finished task as the job's task record keeps it (`task.<jobId>.<index>` in the jobs bucket):
 * its last entry and the generation (1, then one more per resume) that finished it.
 */
export const TaskRecordSchema = TaskEntrySchema.extend({
  generation: z.number().int().positive(),
});
/** A task record. */
export type TaskRecord = z.output<typeof TaskRecordSchema>;

const Count = z.number().int().nonnegative();

/** Finished tasks by status. */
const DoneCountsSchema = z.object({
  passed: Count,
  failed: Count,
  errored: Count,
  timedOut: Count,
  cancelled: Count,
});
type DoneCounts = z.output<typeof DoneCountsSchema>;

/**
 * The job actor's persisted state: counters and a cursor, never a table of every task. A job's
 * tasks are its plan (object store); this generation's work list is the plan in order, or, after
 * a resume, the list of tasks run again (object store); `cursor` is the next position of the
 * work list to dispatch; `active` holds the tasks taken from it and not finished (at most about
 * twice the concurrency); finished tasks are task records. So the state's size does not grow with
 * the job, and a turn costs the same at 100,000 tasks as at 10.
 */
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
  /** Tasks in the plan. */
  total: Count,
  /** 1, plus one per resume. */
  generation: z.number().int().positive(),
  /** Positions in this generation's work list. */
  workLength: Count,
  /** Next position of the work list to take. */
  cursor: Count,
  /** Tasks taken from the work list and not finished, in the order they were taken. */
  active: z.array(TaskEntrySchema),
  /** Finished tasks by status (every generation: a resume moves its re-run tasks out). */
  done: DoneCountsSchema,
  /** Model spend of every attempt so far. */
  spent: z.object({
    costUsd: z.number().nonnegative(),
    promptTokens: Count,
    completionTokens: Count,
  }),
  /**
   * Work-list positions from `position` on were never taken: they ended with `status` and
   * `error` all at once (cancellation, an exhausted budget), with no task record each.
   */
  stopped: z
    .object({
      position: Count,
      status: z.enum(['CANCELLED', 'ERRORED']),
      error: z.string(),
    })
    .optional(),
  /** The first task of this generation that ended ERRORED (the job's failure reason). */
  firstError: z.object({ id: z.string(), error: z.string() }).optional(),
  /**
   * Due time of the job's armed start sweep (a durable reminder): the earliest start deadline of
   * its QUEUED attempts when it was armed. One per job, not one per attempt.
   */
  startSweepAtMs: z.number().int().optional(),
  cancel: z.object({ reason: z.string(), requestedUnixMs: z.number().int() }).optional(),
  /** Benchmark-specific aggregate metrics from the driver's `collect`. */
  extra: z.record(z.string(), z.unknown()).optional(),
});
/** The job actor's state. */
export type JobState = z.output<typeof JobStateSchema>;

function zeroDone(): DoneCounts {
  return { passed: 0, failed: 0, errored: 0, timedOut: 0, cancelled: 0 };
}

/** A job actor that has not received its spec yet. */
export function emptyJobState(jobId: string): JobState {
  return {
    jobId,
    phase: 'NEW',
    reason: '',
    createdUnixMs: 0,
    nextSequence: 1,
    total: 0,
    generation: 1,
    workLength: 0,
    cursor: 0,
    active: [],
    done: zeroDone(),
    spent: { costUsd: 0, promptTokens: 0, completionTokens: 0 },
  };
}

/**
 * The job's work list as transitions read it: which plan index each position holds, and each
 * task's id. The actor builds it from the plan and, after a resume, the stored work list.
 */
export interface JobWork {
  /** Plan index at `position` of this generation's work list. */
  indexAt(position: number): number;
  /** Attempts the task at `position` had in earlier generations (its attempts continue). */
  attemptsAt(position: number): number;
  /** Task id of plan index `index`. */
  idOf(index: number): string;
}

/** A resumed generation's work list as stored: plan indices and their earlier attempts. */
export interface WorkList {
  indices: number[];
  attempts: number[];
}

/** The work list of a first generation: the plan in order. */
export function planWork(taskIds: readonly string[]): JobWork {
  return { indexAt: (p) => p, attemptsAt: () => 0, idOf: (i) => taskIds[i] ?? `#${i}` };
}

/** The work list of a resumed generation. */
export function listWork(taskIds: readonly string[], list: WorkList): JobWork {
  return {
    indexAt: (p) => {
      const i = list.indices[p];
      if (i === undefined) throw new Error(`work list has no position ${p}`);
      return i;
    },
    attemptsAt: (p) => list.attempts[p] ?? 0,
    idOf: (i) => taskIds[i] ?? `#${i}`,
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
  /** Tasks that finished in this transition: their task records must be written. */
  finals: TaskEntry[];
  /** The job record (KV index) must be rewritten. */
  recordChanged: boolean;
  /** The job reached a final phase in this transition. */
  finished: boolean;
  /** Arm the job's start sweep, due at this time (Unix ms). */
  startSweep?: number;
}

export function noEffects(): JobEffects {
  return {
    events: [],
    dispatch: [],
    retries: [],
    finals: [],
    recordChanged: false,
    finished: false,
  };
}

/** Adds `more` (a later transition's effects) to `fx`, in order. */
function mergeEffects(fx: JobEffects, more: JobEffects): void {
  fx.events.push(...more.events);
  fx.dispatch.push(...more.dispatch);
  fx.retries.push(...more.retries);
  fx.finals.push(...more.finals);
  fx.recordChanged ||= more.recordChanged;
  fx.finished ||= more.finished;
  if (more.startSweep !== undefined) fx.startSweep = more.startSweep;
}

/** Counters over a job's tasks. */
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

/** Counts a job's tasks by status and sums their spend. */
export function countTasks(s: JobState): TaskCounts {
  const d = s.done;
  const done = d.passed + d.failed + d.errored + d.timedOut + d.cancelled;
  return {
    total: s.total,
    pending: s.total - done,
    running: s.active.filter((t) => holdsSlot(t.status)).length,
    passed: d.passed,
    failed: d.failed,
    errored: d.errored,
    timedOut: d.timedOut,
    cancelled: d.cancelled,
    done,
    costUsd: s.spent.costUsd,
    promptTokens: s.spent.promptTokens,
    completionTokens: s.spent.completionTokens,
  };
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
  /**
   * False when the task actor did not post `started` for this execution (it ended within the
   * start-report delay, see `createTaskActor`): the job records the start with the outcome.
   */
  reportedStart: z.boolean().default(true),
});
/** A task attempt's outcome. */
export type TaskOutcome = z.output<typeof TaskOutcomeSchema>;

// Kept short: an entry is part of the job's state (the full error is in the task's result).
const MAX_ERROR_CHARS = 200;
/**
 * Most TASK_FINISHED events one stop (cancellation, exhausted budget) writes for tasks never
 * taken from the work list; the rest are summed up in one LOG event.
 */
export const MAX_STOP_EVENTS = 1_000;

function truncate(text: string, max = MAX_ERROR_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/**
 * The next state, to change: its own counters and list of active tasks, whose entries are still
 * those of `state` — a transition copies an entry before it changes it ({@link ownEntry}). Not a
 * copy of every entry: a batch turn of a job running 256 tasks at once applied two messages per
 * task, and copying the whole list for each was a twentieth of the job engine's CPU.
 */
function clone(state: JobState): JobState {
  return {
    ...state,
    active: state.active.slice(),
    done: { ...state.done },
    spent: { ...state.spent },
  };
}

function entryOf(s: JobState, index: number): TaskEntry | undefined {
  return s.active.find((t) => t.index === index);
}

/**
 * The active entry at `position` of a {@link clone}d state, replaced first by a copy of its own
 * (the state it was cloned from keeps the original), to change.
 */
function ownAt(s: JobState, position: number): TaskEntry {
  const copy = { ...(s.active[position] as TaskEntry) };
  s.active[position] = copy;
  return copy;
}

/** {@link ownAt} for the active entry of plan index `index`, or undefined when none. */
function ownEntry(s: JobState, index: number): TaskEntry | undefined {
  const position = s.active.findIndex((t) => t.index === index);
  return position < 0 ? undefined : ownAt(s, position);
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
    s.total = input.taskIds.length;
    s.workLength = s.total;
    s.cursor = 0;
    s.generation = 1;
    s.phase = 'RUNNING';
    s.startedUnixMs = input.now;
    fx.events.push({
      type: 'JOB_STARTED',
      taskId: '',
      message: `job ${s.jobId} started: ${s.total} tasks, concurrency ${input.spec.concurrency}`,
      payload: { total: s.total, concurrency: input.spec.concurrency },
    });
    fill(s, fx, planWork(input.taskIds), input.now);
    maybeFinish(s, fx, input.now);
    return { state: s, effects: fx };
  },

  /** A task actor began executing an attempt. */
  started(
    prev: JobState,
    msg: { index: number; attempt: number; hostId: string; executions: number },
    now: number,
  ): { state: JobState; effects: JobEffects } {
    const fx = noEffects();
    const before = entryOf(prev, msg.index);
    if (!before || before.attempts !== msg.attempt || !holdsSlot(before.status)) {
      return { state: prev, effects: fx };
    }
    const s = clone(prev);
    const t = ownEntry(s, msg.index) as TaskEntry;
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
  outcome(
    prev: JobState,
    o: TaskOutcome,
    now: number,
    work: JobWork,
  ): { state: JobState; effects: JobEffects } {
    const before = entryOf(prev, o.index);
    if (!o.reportedStart && before?.status === 'QUEUED' && before.attempts === o.attempt) {
      // A start the task actor did not report on its own: TASK_STARTED, then the outcome.
      const started = JobTransitions.started(
        prev,
        {
          index: o.index,
          attempt: o.attempt,
          hostId: o.hostId ?? '',
          executions: Math.max(1, o.executions),
        },
        now,
      );
      const ended = JobTransitions.outcome(started.state, { ...o, reportedStart: true }, now, work);
      mergeEffects(started.effects, ended.effects);
      return { state: ended.state, effects: started.effects };
    }
    const fx = noEffects();
    const spec = prev.spec;
    // Stale (an earlier attempt, a duplicate delivery) or unknown: nothing to do. So is the
    // outcome of an execution older than the latest that started: a task actor's activation
    // fenced while its host was unreachable keeps running until it learns so, and its outcome
    // (often an error from the sandbox the new execution replaced) must not become the task's.
    if (
      !before ||
      !spec ||
      before.attempts !== o.attempt ||
      !holdsSlot(before.status) ||
      o.executions < before.executions
    ) {
      return { state: prev, effects: fx };
    }
    const s = clone(prev);
    const t = ownEntry(s, o.index) as TaskEntry;
    t.costUsd += o.costUsd;
    t.promptTokens += o.promptTokens;
    t.completionTokens += o.completionTokens;
    s.spent.costUsd += o.costUsd;
    s.spent.promptTokens += o.promptTokens;
    s.spent.completionTokens += o.completionTokens;
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
      if (o.score !== undefined) t.score = o.score;
      else delete t.score;
      end(s, fx, t, status);
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
      const c = countTasks(s);
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
      stopPending(s, fx, 'ERRORED', 'not run: the job budget is exhausted', work);
      if (countTasks(s).running === 0) {
        finish(s, fx, 'FAILED', budgetReason(s), now);
      } else if (!s.reason) {
        s.reason = budgetReason(s);
      }
    }
    fill(s, fx, work, now);
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
    work: JobWork,
  ): { state: JobState; effects: JobEffects } {
    const t = entryOf(prev, msg.index);
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
        reportedStart: true,
      },
      now,
      work,
    );
  },

  /**
   * The job's start sweep is due: every QUEUED attempt whose start deadline (`queuedAtMs` +
   * `timeoutMs`) has passed ends TIMED_OUT as at {@link JobTransitions.startDeadline} (an attempt
   * dispatched before `queuedAtMs` was kept has one of its own and is left to it), then the sweep
   * is armed again for the earliest deadline left. A sweep other than the armed one is stale.
   */
  startSweep(
    prev: JobState,
    msg: { atMs: number },
    now: number,
    work: JobWork,
  ): { state: JobState; effects: JobEffects } {
    if (prev.startSweepAtMs !== msg.atMs || isFinalPhase(prev.phase) || !prev.spec) {
      return { state: prev, effects: noEffects() };
    }
    const timeoutMs = prev.spec.taskTimeoutMs;
    const fx = noEffects();
    let state = prev;
    const overdue = prev.active.filter(
      (t) => t.status === 'QUEUED' && t.queuedAtMs !== undefined && t.queuedAtMs + timeoutMs <= now,
    );
    for (const t of overdue) {
      const r = JobTransitions.startDeadline(
        state,
        { index: t.index, attempt: t.attempts, timeoutMs },
        now,
        work,
      );
      state = r.state;
      mergeEffects(fx, r.effects);
      if (r.effects.finished) return { state, effects: fx };
    }
    const s = state === prev ? clone(prev) : state;
    delete s.startSweepAtMs;
    armStartSweep(s, fx);
    return { state: s, effects: fx };
  },

  /** A retry's backoff is over: the task becomes dispatchable again. */
  retryDue(
    prev: JobState,
    msg: { index: number; attempt: number },
    now: number,
    work: JobWork,
  ): { state: JobState; effects: JobEffects } {
    const before = entryOf(prev, msg.index);
    if (!before || before.status !== 'BACKOFF' || before.attempts + 1 !== msg.attempt) {
      return { state: prev, effects: noEffects() };
    }
    const s = clone(prev);
    const fx = noEffects();
    const task = ownEntry(s, msg.index) as TaskEntry;
    task.status = 'PENDING';
    delete task.retryAtMs;
    fill(s, fx, work, now);
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
    work: JobWork,
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
    stopPending(s, fx, 'CANCELLED', `cancelled: ${msg.reason}`, work);
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
    for (const { index, status } of [...s.active]) {
      if (holdsSlot(status)) {
        const t = ownEntry(s, index) as TaskEntry;
        t.error = 'cancelled: did not stop within the grace period';
        end(s, fx, t, 'CANCELLED');
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
   * never ran) run again; graded ones keep their results. `rerun` is the new work list, found by
   * the actor from the task records (in plan order).
   */
  resume(
    prev: JobState,
    msg: { spec: JobSpec; rerun: number },
    now: number,
    work: JobWork,
  ): { state: JobState; effects: JobEffects } {
    const fx = noEffects();
    if (!isFinalPhase(prev.phase)) return { state: prev, effects: fx };
    const s = clone(prev);
    s.spec = msg.spec;
    // A sweep armed in the last generation may have fired on the finished job: arm afresh.
    delete s.startSweepAtMs;
    s.phase = 'RUNNING';
    s.reason = '';
    delete s.cancel;
    delete s.finishedUnixMs;
    delete s.extra;
    delete s.stopped;
    delete s.firstError;
    s.generation += 1;
    s.workLength = msg.rerun;
    s.cursor = 0;
    s.active = [];
    s.done.errored = 0;
    s.done.cancelled = 0;
    fx.recordChanged = true;
    fx.events.push({
      type: 'JOB_RESUMED',
      taskId: '',
      message: `job ${s.jobId} resumed: ${msg.rerun} of ${s.total} tasks run again`,
      payload: { rerun: msg.rerun, total: s.total },
    });
    fill(s, fx, work, now);
    maybeFinish(s, fx, now);
    return { state: s, effects: fx };
  },
};

/** Ends an active task with `status`: out of the state, into a task record and the counters. */
function end(s: JobState, fx: JobEffects, t: TaskEntry, status: TaskPhase): void {
  t.status = status;
  delete t.retryAtMs;
  s.active = s.active.filter((a) => a.index !== t.index);
  fx.finals.push(t);
  fx.recordChanged = true;
  switch (status) {
    case 'PASSED':
      s.done.passed++;
      break;
    case 'FAILED':
      s.done.failed++;
      break;
    case 'TIMED_OUT':
      s.done.timedOut++;
      break;
    case 'CANCELLED':
      s.done.cancelled++;
      break;
    default:
      s.done.errored++;
      if (!s.firstError) s.firstError = { id: t.id, error: t.error ?? '' };
  }
}

function budgetSpent(s: JobState): boolean {
  const b = s.spec?.budget;
  if (!b) return false;
  const c = s.spent;
  return (
    (b.usd !== undefined && c.costUsd >= b.usd) ||
    (b.tokens !== undefined && c.promptTokens + c.completionTokens >= b.tokens)
  );
}

function budgetReason(s: JobState): string {
  const c = s.spent;
  const b = s.spec?.budget;
  return `budget exhausted: spent $${c.costUsd.toFixed(4)}${b?.usd !== undefined ? ` of $${b.usd}` : ''}, ${c.promptTokens + c.completionTokens} tokens${b?.tokens !== undefined ? ` of ${b.tokens}` : ''}`;
}

/**
 * Ends every task that has not started with `status`: active ones waiting (PENDING, BACKOFF) as
 * records, and the rest of the work list all at once (`stopped`).
 */
function stopPending(
  s: JobState,
  fx: JobEffects,
  status: 'CANCELLED' | 'ERRORED',
  error: string,
  work: JobWork,
): void {
  const finished = (id: string) =>
    fx.events.push({
      type: 'TASK_FINISHED',
      taskId: id,
      message: `task ${id} ${status.toLowerCase()}: ${error}`,
      payload: { status, error },
    });
  for (const { index, status: was } of [...s.active]) {
    if (was === 'PENDING' || was === 'BACKOFF') {
      const t = ownEntry(s, index) as TaskEntry;
      t.error = error;
      end(s, fx, t, status);
      finished(t.id);
    }
  }
  const rest = s.workLength - s.cursor;
  if (rest <= 0) return;
  for (let p = s.cursor; p < s.workLength && p < s.cursor + MAX_STOP_EVENTS; p++) {
    finished(work.idOf(work.indexAt(p)));
  }
  if (rest > MAX_STOP_EVENTS) {
    fx.events.push({
      type: 'LOG',
      taskId: '',
      message: `${rest - MAX_STOP_EVENTS} more tasks ${status.toLowerCase()}: ${error}`,
      payload: { status, error, tasks: rest - MAX_STOP_EVENTS },
    });
  }
  s.stopped = { position: s.cursor, status, error };
  if (status === 'CANCELLED') s.done.cancelled += rest;
  else {
    s.done.errored += rest;
    if (!s.firstError) s.firstError = { id: work.idOf(work.indexAt(s.cursor)), error };
  }
  s.cursor = s.workLength;
  fx.recordChanged = true;
}

/**
 * Dispatches waiting tasks while the job has free concurrency slots: retried ones first, then new
 * ones from the work list. Tasks in backoff hold no slot, but new ones are not taken while as many
 * wait as run, so the state stays bounded by twice the concurrency.
 */
function fill(s: JobState, fx: JobEffects, work: JobWork, now: number): void {
  if (s.phase !== 'RUNNING' || s.cancel || !s.spec) return;
  const limit = s.spec.concurrency;
  let free = limit - countTasks(s).running;
  const queue = (t: TaskEntry) => {
    t.status = 'QUEUED';
    t.attempts += 1;
    t.executions = 0;
    t.queuedAtMs = now;
    delete t.retryAtMs;
    free--;
    fx.recordChanged = true;
    fx.dispatch.push({ index: t.index, attempt: t.attempts });
    fx.events.push({
      type: 'TASK_QUEUED',
      taskId: t.id,
      message: `task ${t.id} attempt ${t.attempts} queued`,
      payload: { attempt: t.attempts },
    });
  };
  for (let p = 0; p < s.active.length && free > 0; p++) {
    if (s.active[p]?.status === 'PENDING') queue(ownAt(s, p));
  }
  while (free > 0 && s.cursor < s.workLength && s.active.length < 2 * limit) {
    const index = work.indexAt(s.cursor);
    const attempts = work.attemptsAt(s.cursor);
    s.cursor += 1;
    const t: TaskEntry = {
      index,
      id: work.idOf(index),
      status: 'PENDING',
      attempts,
      costUsd: 0,
      promptTokens: 0,
      completionTokens: 0,
      durationMs: 0,
      executions: 0,
    };
    s.active.push(t);
    queue(t);
  }
  armStartSweep(s, fx);
}

/**
 * Arms the job's start sweep, if none is armed, for the earliest start deadline of its QUEUED
 * attempts (`queuedAtMs` + `taskTimeoutMs`). Deadlines only grow with dispatch time, so one armed
 * sweep is never late for the attempts dispatched after it.
 */
function armStartSweep(s: JobState, fx: JobEffects): void {
  if (s.startSweepAtMs !== undefined || !s.spec || isFinalPhase(s.phase)) return;
  let earliest: number | undefined;
  for (const t of s.active) {
    if (t.status !== 'QUEUED' || t.queuedAtMs === undefined) continue;
    if (earliest === undefined || t.queuedAtMs < earliest) earliest = t.queuedAtMs;
  }
  if (earliest === undefined) return;
  s.startSweepAtMs = earliest + s.spec.taskTimeoutMs;
  fx.startSweep = s.startSweepAtMs;
}

/** Finishes the job when no task is left to run. */
function maybeFinish(s: JobState, fx: JobEffects, now: number): void {
  if (isFinalPhase(s.phase) || s.phase === 'NEW') return;
  const c = countTasks(s);
  if (c.pending > 0) return;
  if (s.cancel) {
    finish(s, fx, 'CANCELLED', s.cancel.reason, now);
  } else if (budgetSpent(s) || s.reason.startsWith('budget exhausted')) {
    finish(s, fx, 'FAILED', budgetReason(s), now);
  } else if (c.errored > 0) {
    const first = s.firstError;
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

/**
 * A task's status as results show it, from what is known of it: its active entry, its task record
 * and whether this generation's work list holds it (`position`, undefined when not). A task with
 * neither is pending (not taken yet), unless the work list was stopped before its position.
 */
export function taskView(
  s: JobState,
  index: number,
  id: string,
  record: TaskRecord | undefined,
  position: number | undefined,
): TaskEntry {
  const active = entryOf(s, index);
  if (active) return active;
  if (record && record.generation === s.generation) return stripGeneration(record);
  const blank: TaskEntry = {
    index,
    id,
    status: 'PENDING',
    attempts: 0,
    costUsd: 0,
    promptTokens: 0,
    completionTokens: 0,
    durationMs: 0,
    executions: 0,
  };
  if (position !== undefined) {
    const stop = s.stopped;
    if (stop && position >= stop.position) {
      return {
        ...(record ? stripGeneration(record) : blank),
        status: stop.status,
        error: stop.error,
      };
    }
    return { ...(record ? stripGeneration(record) : blank), status: 'PENDING' };
  }
  return record ? stripGeneration(record) : blank;
}

/**
 * Position of each plan index in the state's current work list (undefined when not in it):
 * identity in a first generation, from `work` (the stored list) after a resume.
 */
export function positionsOf(
  s: JobState,
  work: WorkList | undefined,
): (index: number) => number | undefined {
  if (s.generation <= 1) return (i) => (i < s.workLength ? i : undefined);
  const map = new Map<number, number>();
  (work?.indices ?? []).forEach((index, position) => map.set(index, position));
  return (i) => map.get(i);
}

function stripGeneration(r: TaskRecord): TaskEntry {
  const { generation: _g, ...entry } = r;
  return entry;
}
