import { isTaskFileRef, tasksOfTaskFile } from './task-file';
import { type ActorContext, defineActor } from '@troupe/actors';
import {
  ErrorReason,
  errorCode,
  hasReason,
  invalidArgument,
  isRetryable,
  TroupeError,
} from '@troupe/proto';
import { z } from 'zod';
import { BudgetLedger } from '../budget/budget-ledger';
import { remindAt } from '../reminders';
import {
  type CollectedTask,
  MAX_TASKS_PER_JOB,
  type PlannedTask,
  TASK_ID_PATTERN,
  TASK_ID_RULE,
} from './job-driver';
import { type JobEventDraft, type JobEventRecord } from './job-event';
import { aggregateOf, JOB_DECIDED_EXECUTION, recordOf } from './job-record';
import {
  compactId,
  JOB_ACTOR_KIND,
  type JobRuntime,
  type JobRuntimeHolder,
  revive,
  TASK_ACTOR_KIND,
  taskActorId,
} from './job-runtime';
import { type JobSpec, JobSpecSchema } from './job-spec';
import { jobPayloadPrefix } from './job-store';
import {
  countTasks,
  emptyJobState,
  isFinalPhase,
  type JobEffects,
  type JobState,
  JobStateSchema,
  JobTransitions,
  noEffects,
  positionsOf,
  type TaskEntry,
  TaskOutcomeSchema,
  taskView,
  type WorkList,
} from './job-state';

const Index = z.number().int().nonnegative();
/** Largest driver-specific `data` of a progress report, as JSON characters. */
const MAX_PROGRESS_DATA_CHARS = 8_192;
const Attempt = z.number().int().positive();

/** Messages of the job actor. */
export const JobActorMessages = {
  /** The validated spec (posted once by SubmitJob, dedupe id `start-<jobId>`). */
  start: z.object({ spec: JobSpecSchema, createdUnixMs: z.number().int() }),
  /** Re-run the tasks of a finished job that did not get a grade (SubmitJob `resume_job_id`). */
  resume: z.object({ spec: JobSpecSchema }),
  /** A task actor began executing an attempt. */
  started: z.object({
    index: Index,
    attempt: Attempt,
    hostId: z.string(),
    executions: z.number().int().positive(),
  }),
  /** A task attempt ended. */
  outcome: TaskOutcomeSchema,
  /** Progress inside a task (told, best effort). */
  progress: z.object({
    index: Index,
    attempt: Attempt,
    message: z.string().max(2_000).optional(),
    step: z.number().int().nonnegative().optional(),
    tokens: z.number().int().nonnegative().optional(),
    costUsd: z.number().nonnegative().optional(),
    data: z
      .record(z.string(), z.unknown())
      .refine((d) => JSON.stringify(d).length <= MAX_PROGRESS_DATA_CHARS, {
        message: `must be at most ${MAX_PROGRESS_DATA_CHARS} characters as JSON`,
      })
      .optional(),
  }),
  /** A retry's backoff is over (a durable reminder). */
  retry: z.object({ index: Index, attempt: Attempt }),
  /**
   * The job's start sweep is due (a durable reminder, one armed at a time): the attempts whose
   * task actor did not start within `taskTimeoutMs` of their dispatch end TIMED_OUT.
   */
  startSweep: z.object({ atMs: z.number().int() }),
  /**
   * The start deadline of one attempt (a durable reminder set by versions before the start
   * sweep, for attempts dispatched then): if its task actor never started, it ends TIMED_OUT.
   */
  startDeadline: z.object({ index: Index, attempt: Attempt }),
  /** Cancel the job (asked by CancelJob; replies with the job record). */
  cancel: z.object({ reason: z.string().min(1).max(500) }),
  /** The cancellation grace period is over (a durable reminder). */
  cancelDeadline: z.object({}),
  /** The job's state (asked by GetResults). */
  snapshot: z.object({}),
  /**
   * Liveness probe of the job manager's watchdog: activates the job actor if its wake was lost,
   * and pings the task actors of running tasks so a lost wake of theirs is recovered too.
   */
  ping: z.object({}),
};

type Result = { state: JobState; effects: JobEffects };

/** Options of {@link createJobActor}. */
export interface JobActorOptions {
  /**
   * Passivate after this long without messages (the state stays in KV).
   * @default 300000
   */
  idleTimeoutMs?: number;
}

/**
 * The job actor (kind `job`, id = job id): keeps the spec, the counters, a cursor into the plan
 * and the tasks in flight (finished tasks are task records, so a job's size is not bounded by its
 * state), fans tasks out to task actors under the job's concurrency, retries infrastructure
 * failures with backoff (durable reminders), handles cancellation, and records every change as an
 * event on the job's event subject and in the job's KV record. All transitions are in
 * {@link JobTransitions}; this file carries out their effects.
 */
export function createJobActor(holder: JobRuntimeHolder, options: JobActorOptions = {}) {
  return defineActor({
    kind: JOB_ACTOR_KIND,
    state: JobStateSchema,
    initialState: (id) => emptyJobState(id),
    messages: JobActorMessages,
    idleTimeoutMs: options.idleTimeoutMs ?? 300_000,
    maxAttempts: 5,
    handlers: {
      start: async (ctx, msg, state) => ({ state: await startJob(ctx, holder, state, msg) }),
      resume: async (ctx, msg, state) => ({ state: await resumeJob(ctx, holder, state, msg) }),
      started: (ctx, msg, state) =>
        batchTurn(ctx, holder, state, { type: 'started', payload: msg }),
      outcome: (ctx, msg, state) =>
        batchTurn(ctx, holder, state, { type: 'outcome', payload: msg }),
      progress: (ctx, msg, state) =>
        batchTurn(ctx, holder, state, { type: 'progress', payload: msg }),
      retry: (ctx, msg, state) => batchTurn(ctx, holder, state, { type: 'retry', payload: msg }),
      startSweep: (ctx, msg, state) =>
        batchTurn(ctx, holder, state, { type: 'startSweep', payload: msg }),
      startDeadline: (ctx, msg, state) =>
        batchTurn(ctx, holder, state, { type: 'startDeadline', payload: msg }),
      cancel: async (ctx, msg, state) => {
        const next = await cancelJob(ctx, holder, state, msg);
        return { state: next, reply: recordOf(next, now()) };
      },
      cancelDeadline: (ctx, msg, state) =>
        batchTurn(ctx, holder, state, { type: 'cancelDeadline', payload: msg }),
      snapshot: (_ctx, _msg, state) => ({ reply: state }),
      ping: (ctx, _msg, state) => {
        pingTasks(ctx, holder, state);
        return { reply: {} };
      },
    },
  });
}

/** The job actor definition type. */
export type JobActorDefinition = ReturnType<typeof createJobActor>;

/**
 * Plans a job: creates its budget scope, asks the driver for the tasks, checks their ids and
 * stores the plan. A failure becomes `planError` (the job ends FAILED) — except a shutdown, which
 * is rethrown so the `start` message is replayed by the next activation.
 */
async function planJob(
  ctx: ActorContext<JobState>,
  rt: JobRuntime,
  holder: JobRuntimeHolder,
  jobId: string,
  spec: JobSpec,
): Promise<{ taskIds?: string[]; planError?: string }> {
  try {
    const driver = rt.drivers.get(spec.kind);
    if (spec.budget && (spec.budget.usd !== undefined || spec.budget.tokens !== undefined)) {
      await new BudgetLedger(ctx.refs).createScope(`job:${jobId}`, 'cluster', {
        ...(spec.budget.usd !== undefined ? { usd: spec.budget.usd } : {}),
        ...(spec.budget.tokens !== undefined ? { tokens: spec.budget.tokens } : {}),
      });
    }
    const planContext = {
      jobId,
      signal: ctx.signal,
      log: ctx.log,
      nats: { connection: rt.nc, cluster: rt.cluster, replicas: rt.replicas },
      payloadPrefix: jobPayloadPrefix(jobId),
    };
    const plan =
      isTaskFileRef(spec.tasks) && driver.taskFile
        ? await driver.taskFile.plan(
            spec,
            await tasksOfTaskFile(spec, driver, (upload) => rt.store.getTaskFile(upload), {
              signal: ctx.signal,
            }),
            planContext,
          )
        : await driver.plan(spec, planContext);
    checkPlan(plan);
    await Promise.all([
      rt.store.putPlan(jobId, plan),
      rt.store.putTaskIds(
        jobId,
        plan.map((t) => t.id),
      ),
    ]);
    holder.rememberPlan(jobId, plan);
    return { taskIds: plan.map((t) => t.id) };
  } catch (err) {
    // A shutdown or fencing: the `start` message is replayed by the next activation. A store
    // outage (the plan's write during a NATS server loss) is waited out by the runtime, not
    // taken for a bad plan that fails the job.
    if (ctx.signal.aborted || hasReason(err, ErrorReason.STORE_UNAVAILABLE)) throw err;
    ctx.log.warn({ err, jobId }, 'planning failed');
    return { planError: err instanceof Error ? err.message : String(err) };
  }
}

function checkPlan(plan: readonly PlannedTask[]): void {
  if (plan.length > MAX_TASKS_PER_JOB) {
    throw invalidArgument(
      'plan',
      `a job holds at most ${MAX_TASKS_PER_JOB} tasks (split the task set into several jobs)`,
      plan.length,
    );
  }
  const seen = new Set<string>();
  plan.forEach((t, i) => {
    if (typeof t.id !== 'string' || !TASK_ID_PATTERN.test(t.id)) {
      throw invalidArgument(`plan[${i}].id`, TASK_ID_RULE, t.id);
    }
    if (seen.has(t.id)) throw invalidArgument(`plan[${i}].id`, 'task ids must be unique', t.id);
    seen.add(t.id);
  });
}

const now = () => Date.now();

/** `start`: plans the job and dispatches its first tasks (a repeated submission changes nothing). */
async function startJob(
  ctx: ActorContext<JobState>,
  holder: JobRuntimeHolder,
  state: JobState,
  msg: z.output<typeof JobActorMessages.start>,
): Promise<JobState> {
  if (state.phase !== 'NEW') return state;
  const rt = holder.get();
  const spec = msg.spec;
  const { taskIds, planError } = await planJob(ctx, rt, holder, state.jobId, spec);
  const result = JobTransitions.start(state, {
    spec,
    createdUnixMs: msg.createdUnixMs,
    taskIds,
    ...(planError !== undefined ? { planError } : {}),
    now: now(),
  });
  return carryOut(ctx, rt, holder, state, result);
}

/** `resume`: a finished job runs again the tasks that got no grade. */
async function resumeJob(
  ctx: ActorContext<JobState>,
  holder: JobRuntimeHolder,
  state: JobState,
  msg: z.output<typeof JobActorMessages.resume>,
): Promise<JobState> {
  const rt = holder.get();
  holder.forget(state.jobId);
  if (!isFinalPhase(state.phase)) return state;
  // The new work list: every task without a grade (no record: never taken, or stopped).
  const records = await rt.store.taskRecords(state.jobId);
  const rerun: WorkList = { indices: [], attempts: [] };
  for (let i = 0; i < state.total; i++) {
    const r = records.get(i);
    if (!r || r.status === 'ERRORED' || r.status === 'CANCELLED') {
      rerun.indices.push(i);
      rerun.attempts.push(r?.attempts ?? 0);
    }
  }
  const generation = state.generation + 1;
  await rt.store.putWork(state.jobId, generation, rerun);
  holder.rememberWork(state.jobId, generation, rerun);
  const work = await holder.work(state.jobId, generation);
  const result = JobTransitions.resume(
    state,
    { spec: msg.spec, rerun: rerun.indices.length },
    now(),
    work,
  );
  if (result.state !== state && msg.spec.budget) {
    // The finished job's scope was folded into the cluster's: open one for what is left.
    const spent = countTasks(state);
    const { usd, tokens } = msg.spec.budget;
    await new BudgetLedger(ctx.refs).createScope(`job:${state.jobId}`, 'cluster', {
      ...(usd !== undefined ? { usd: Math.max(0, usd - spent.costUsd) } : {}),
      ...(tokens !== undefined
        ? { tokens: Math.max(0, tokens - spent.promptTokens - spent.completionTokens) }
        : {}),
    });
  }
  return carryOut(ctx, rt, holder, state, result);
}

/** `cancel`: the job stops taking tasks and cancels those running (then a grace period). */
async function cancelJob(
  ctx: ActorContext<JobState>,
  holder: JobRuntimeHolder,
  state: JobState,
  msg: z.output<typeof JobActorMessages.cancel>,
): Promise<JobState> {
  const rt = holder.get();
  if (state.phase === 'NEW') {
    throw new TroupeError('UNAVAILABLE', `job ${state.jobId} has not started yet; retry`);
  }
  const work = await holder.work(state.jobId, state.generation);
  const result = JobTransitions.cancel(state, msg, now(), work);
  const next = await carryOut(ctx, rt, holder, state, result);
  if (next.cancel && !state.cancel && next.phase === 'RUNNING') {
    await remindAt(
      rt.nc,
      rt.cluster,
      ctx.self,
      now() + rt.cancelGraceMs,
      'cancelDeadline',
      {},
      { id: `cancel-${state.jobId}` },
    );
  }
  return next;
}

/**
 * `ping`: pings the task actors of running tasks, so a lost wake of theirs is recovered. Not
 * awaited: a task actor in a long turn answers BUSY; a sleeping one with a pending `run` is
 * activated by the ask and then processes it.
 */
function pingTasks(ctx: ActorContext<JobState>, holder: JobRuntimeHolder, state: JobState): void {
  if (state.phase !== 'RUNNING') return;
  const rt = holder.get();
  for (const t of state.active) {
    if (t.status !== 'QUEUED' && t.status !== 'RUNNING') continue;
    const addr = { kind: TASK_ACTOR_KIND, id: taskActorId(state.jobId, t.index) };
    void revive(rt.directory, addr, ctx.log)
      .then(() =>
        ctx.refs
          .refOf(addr)
          .withHints({ jobId: state.jobId })
          .ask('ping', {}, { timeoutMs: 5_000, requireIdle: true }),
      )
      .catch(() => undefined);
  }
}

/** The posted messages a batch turn applies (every posted type but `start` and `resume`). */
type BatchedMessage = {
  [
    K in
      | 'started'
      | 'outcome'
      | 'progress'
      | 'retry'
      | 'startSweep'
      | 'startDeadline'
      | 'cancelDeadline'
  ]: {
    type: K;
    payload: z.output<(typeof JobActorMessages)[K]>;
  };
}[keyof typeof BATCHED];

const BATCHED = {
  started: true,
  outcome: true,
  progress: true,
  retry: true,
  startSweep: true,
  startDeadline: true,
  cancelDeadline: true,
} as const;

/**
 * Job actors (by job id) whose last batch turn failed, with the inbox sequence it began at: that
 * message is retried alone, so a message that keeps failing is dead-lettered by itself, never the
 * messages that were only in its batch.
 */
const failedBatches = new Map<string, number>();

/**
 * One turn for the posted message that began it and every posted message already waiting behind
 * it (drained from the inbox): each goes through its transition in order, in memory, and their
 * effects — task records, events, the job record, dispatches, reminders — are carried out
 * together before the one commit. A job of thousands of tasks gets its outcomes in bursts; a
 * round trip per effect per message made its actor's serial turns the job engine's limit.
 *
 * A failure anywhere fails the turn: it is retried from the first message (every effect is
 * idempotent), alone (see {@link failedBatches}); the drained messages are read again by the turns
 * after it.
 */
async function batchTurn(
  ctx: ActorContext<JobState>,
  holder: JobRuntimeHolder,
  state: JobState,
  first: BatchedMessage,
): Promise<{ state: JobState }> {
  const key = state.jobId;
  const seq = ctx.message.seq;
  const alone = seq !== undefined && failedBatches.get(key) === seq;
  const staged = new StagedEffects(ctx, holder);
  try {
    let s = await applyPosted(ctx, holder, state, first, staged);
    const more = alone ? [] : await ctx.drainInbox();
    for (const m of more) {
      if (Object.hasOwn(BATCHED, m.type)) {
        s = await applyPosted(ctx, holder, s, m as BatchedMessage, staged);
        continue;
      }
      // The other types (posted rather than asked, or a resume behind task messages): as their
      // own handlers, in order, after what is staged.
      await staged.flush(s);
      if (m.type === 'start') {
        s = await startJob(ctx, holder, s, m.payload as z.output<typeof JobActorMessages.start>);
      } else if (m.type === 'resume') {
        s = await resumeJob(ctx, holder, s, m.payload as z.output<typeof JobActorMessages.resume>);
      } else if (m.type === 'cancel') {
        s = await cancelJob(ctx, holder, s, m.payload as z.output<typeof JobActorMessages.cancel>);
      } else if (m.type === 'ping') {
        pingTasks(ctx, holder, s);
      }
    }
    await staged.flush(s);
    failedBatches.delete(key);
    return { state: s };
  } catch (err) {
    if (seq !== undefined && !ctx.signal.aborted) failedBatches.set(key, seq);
    throw err;
  }
}

/** Applies one batched message: its transition, its effects staged in `staged`. */
async function applyPosted(
  ctx: ActorContext<JobState>,
  holder: JobRuntimeHolder,
  state: JobState,
  m: BatchedMessage,
  staged: StagedEffects,
): Promise<JobState> {
  // A finished job takes no transition (every one is a no-op then): a late outcome or a
  // reminder armed before it ended loads nothing, since its plan may be deleted already
  // (DeleteJob, the job retention; in the soak such reminders were dead-lettered).
  // So does a job actor that never started (retired with its deleted job, then woken by one).
  if (isFinalPhase(state.phase) || !state.spec) return state;
  const rt = holder.get();
  const t = now();
  switch (m.type) {
    case 'started':
      return carryOut(ctx, rt, holder, state, JobTransitions.started(state, m.payload, t), staged);
    case 'outcome': {
      const work = await holder.work(state.jobId, state.generation);
      const result = JobTransitions.outcome(state, m.payload, t, work);
      return carryOut(ctx, rt, holder, state, result, staged);
    }
    case 'progress': {
      const msg = m.payload;
      if (isFinalPhase(state.phase)) return state;
      // Best effort: a report may overtake the `started` post or trail the outcome (the task
      // has left the state then: its record tells the attempt, staged or stored).
      const tk =
        state.active.find((a) => a.index === msg.index) ??
        staged.finalOf(msg.index) ??
        (await rt.store.taskRecordsAt(state.jobId, [msg.index])).get(msg.index);
      if (!tk || tk.attempts !== msg.attempt) return state;
      const event: JobEventDraft =
        msg.message !== undefined
          ? { type: 'LOG', taskId: tk.id, message: msg.message, payload: { attempt: msg.attempt } }
          : {
              type: 'TASK_PROGRESS',
              taskId: tk.id,
              message: `task ${tk.id} step ${msg.step ?? '?'}`,
              payload: {
                // Driver keys first: the standard ones below always win.
                ...(msg.data ?? {}),
                attempt: msg.attempt,
                ...(msg.step !== undefined ? { step: msg.step } : {}),
                ...(msg.tokens !== undefined ? { tokens: msg.tokens } : {}),
                ...(msg.costUsd !== undefined ? { costUsd: msg.costUsd } : {}),
              },
            };
      const result: Result = { state, effects: { ...noEffects(), events: [event] } };
      return carryOut(ctx, rt, holder, state, result, staged, true);
    }
    case 'retry': {
      const work = await holder.work(state.jobId, state.generation);
      const result = JobTransitions.retryDue(state, m.payload, t, work);
      return carryOut(ctx, rt, holder, state, result, staged);
    }
    case 'startSweep':
    case 'startDeadline': {
      const timeoutMs = state.spec?.taskTimeoutMs ?? 0;
      const work = await holder.work(state.jobId, state.generation);
      const result =
        m.type === 'startSweep'
          ? JobTransitions.startSweep(state, m.payload, t, work)
          : JobTransitions.startDeadline(state, { ...m.payload, timeoutMs }, t, work);
      // The task actors of these attempts never ran, so nothing else writes their results.
      for (const tk of result.effects.finals) {
        ctx.log.warn(
          { jobId: state.jobId, taskId: tk.id, attempt: tk.attempts },
          'task never started',
        );
        await rt.store.putTaskResult(state.jobId, {
          taskId: tk.id,
          index: tk.index,
          attempt: tk.attempts,
          execution: JOB_DECIDED_EXECUTION,
          status: 'TIMED_OUT',
          costUsd: 0,
          tokens: 0,
          durationMs: timeoutMs,
          stopReason: 'timeout',
          error: tk.error ?? '',
          artifacts: [],
        });
      }
      return carryOut(ctx, rt, holder, state, result, staged);
    }
    case 'cancelDeadline':
      return carryOut(ctx, rt, holder, state, JobTransitions.cancelDeadline(state, t), staged);
  }
}

/**
 * Effects staged by one turn's transitions, carried out together by {@link flush}: task records
 * first (results read after a count that includes a task find its record), then the job record
 * and the events, then dispatches, retry reminders and cancelled start deadlines.
 */
class StagedEffects {
  private finals = new Map<number, TaskEntry>();
  private generation = 0;
  private events: JobEventRecord[] = [];
  /** The state whose job record is to be written (the latest that changed it). */
  private record?: JobState;
  private dispatches: { index: number; attempt: number }[] = [];
  private retries: { index: number; attempt: number; atMs: number }[] = [];
  /** Due time of the start sweep to arm. */
  private startSweep?: number;

  constructor(
    private readonly ctx: ActorContext<JobState>,
    private readonly holder: JobRuntimeHolder,
  ) {}

  /** A task finished by a staged transition, not yet written. */
  finalOf(index: number): TaskEntry | undefined {
    return this.finals.get(index);
  }

  stage(next: JobState, effects: JobEffects, events: JobEventRecord[], writeRecord: boolean): void {
    for (const f of effects.finals) this.finals.set(f.index, f);
    this.generation = next.generation;
    this.events.push(...events);
    if (writeRecord) this.record = next;
    this.dispatches.push(...effects.dispatch);
    this.retries.push(...effects.retries);
    if (effects.startSweep !== undefined) this.startSweep = effects.startSweep;
  }

  /** Writes the staged task records (before a driver's `collect` reads them). */
  async flushRecords(jobId: string): Promise<void> {
    if (this.finals.size === 0) return;
    const rt = this.holder.get();
    await rt.store.putTaskRecords(jobId, this.generation, [...this.finals.values()]);
    this.finals.clear();
  }

  /** Carries out everything staged; `state` is the turn's state now. */
  async flush(state: JobState, finished = false): Promise<void> {
    const { ctx, holder } = this;
    const rt = holder.get();
    await this.flushRecords(state.jobId);
    const events = this.events.splice(0);
    const record = this.record;
    this.record = undefined;
    const t = now();
    if (finished) {
      // The record first: a watcher that sees JOB_FINISHED and then reads the job finds it final.
      if (record) await rt.store.putJob(recordOf(record, t));
      await rt.events.append(events);
    } else {
      await Promise.all([
        record ? rt.store.putJob(recordOf(record, t)) : undefined,
        events.length > 0 ? rt.events.append(events) : undefined,
      ]);
    }
    const dispatches = this.dispatches.splice(0);
    if (dispatches.length > 0) {
      const plan = await holder.plan(state.jobId);
      await Promise.all(
        dispatches.map(async ({ index, attempt }) => {
          const task = plan[index];
          if (!task) throw new TroupeError('INTERNAL', `job ${state.jobId} has no task ${index}`);
          await dispatch(ctx, rt, state.jobId, index, task, attempt);
        }),
      );
    }
    const sweepAtMs = this.startSweep;
    this.startSweep = undefined;
    if (sweepAtMs !== undefined) {
      // The job's own clock on its attempts: one whose task actor never starts (its `run` never
      // delivered, the actor never activated) still times out. Set before the state that
      // records it as armed commits.
      await remindAt(
        rt.nc,
        rt.cluster,
        ctx.self,
        sweepAtMs,
        'startSweep',
        { atMs: sweepAtMs },
        { id: compactId(['start-sweep', state.jobId, sweepAtMs], 128) },
      );
    }
    await Promise.all(
      this.retries
        .splice(0)
        .map((r) =>
          remindAt(
            rt.nc,
            rt.cluster,
            ctx.self,
            r.atMs,
            'retry',
            { index: r.index, attempt: r.attempt },
            { id: `retry-${state.jobId}-${r.index}-${r.attempt}` },
          ),
        ),
    );
  }
}

/**
 * Stages a transition's effects — task records, events, job record, task dispatches, retry
 * reminders, all idempotent — in `staged` (carried out before the turn commits), and returns the
 * state to commit (with its event counter advanced). Without `staged` they are carried out now. A
 * transition that finishes the job carries out everything staged before it, then its own.
 */
async function carryOut(
  ctx: ActorContext<JobState>,
  rt: JobRuntime,
  holder: JobRuntimeHolder,
  prev: JobState,
  result: Result,
  staged?: StagedEffects,
  eventsOnly = false,
): Promise<JobState> {
  const { effects } = result;
  if (result.state === prev && effects.events.length === 0) return prev;
  const out = staged ?? new StagedEffects(ctx, holder);
  const t = Date.now();
  const next: JobState = { ...result.state };
  const drafts = [...effects.events];
  if (effects.finished) {
    // The driver's `collect` reads every task record: this transition's and those staged before.
    out.stage(next, { ...noEffects(), finals: effects.finals }, [], false);
    await out.flushRecords(next.jobId);
    next.extra = await collectExtra(rt, next);
    const aggregate = aggregateOf(next, t);
    drafts.push({
      type: 'JOB_FINISHED',
      taskId: '',
      message: `job ${next.jobId} ${next.phase.toLowerCase()}${next.reason ? `: ${next.reason}` : ''} — ${aggregate.passed}/${aggregate.total} passed`,
      payload: { state: next.phase, reason: next.reason, aggregate },
    });
  }
  const events: JobEventRecord[] = drafts.map((d, i) => ({
    ...d,
    sequence: next.nextSequence + i,
    jobId: next.jobId,
    timeUnixMs: d.timeUnixMs ?? t,
  }));
  next.nextSequence += events.length;
  const writeRecord = !eventsOnly && !!next.spec && (effects.recordChanged || effects.finished);
  out.stage(next, effects.finished ? { ...effects, finals: [] } : effects, events, writeRecord);
  if (!staged || effects.finished) await out.flush(next, effects.finished);
  if (effects.finished) {
    holder.forget(next.jobId);
    // What the plan stored for its tasks (task payloads) is not kept: best effort, a leftover only
    // takes room. Only for drivers that store any: it lists every object of the cluster.
    if (
      next.spec &&
      rt.drivers.has(next.spec.kind) &&
      rt.drivers.get(next.spec.kind).storesPayloads
    ) {
      await rt.store
        .deletePrefix(jobPayloadPrefix(next.jobId))
        .catch((err: unknown) => ctx.log.warn({ err }, 'could not delete the job payloads'));
    }
    if (next.spec?.budget) {
      // Fold the job's budget scope into the cluster's (a ledger tree holds at most 1,000 scopes);
      // its spending stays counted there. Best effort: a leftover scope only takes room.
      await new BudgetLedger(ctx.refs)
        .removeScope(`job:${next.jobId}`)
        .catch((err: unknown) => ctx.log.warn({ err }, 'could not remove the job budget scope'));
    }
  }
  return next;
}

/**
 * Posts the `run` of one attempt to its task actor. A `run` that cannot be delivered — larger than
 * the server's `max_payload`, or refused by the inbox stream — ends the attempt ERRORED with the
 * reason (an outcome posted to the job itself, so it goes through the same transition as the task
 * actor's), never the job actor's turn: a failing turn would be retried and then dead-lettered,
 * leaving the job waiting for a task that never runs. A transient failure is reported as an
 * infrastructure error, retried under the job's retry policy.
 */
async function dispatch(
  ctx: ActorContext<JobState>,
  rt: JobRuntime,
  jobId: string,
  index: number,
  task: PlannedTask,
  attempt: number,
): Promise<void> {
  const ref = ctx.refs.refOf({ kind: TASK_ACTOR_KIND, id: taskActorId(jobId, index) }).withHints({
    jobId,
  });
  const run = { jobId, index, taskId: task.id, attempt, input: task.input };
  const size = Buffer.byteLength(JSON.stringify(run));
  const maxPayload = rt.nc.info?.max_payload;
  let failure: { error: string; infrastructure: boolean } | undefined;
  if (maxPayload !== undefined && size > maxPayload) {
    failure = {
      error: `INVALID_ARGUMENT: the task's input is ${size} bytes, more than the NATS server's max_payload (${maxPayload} bytes): a driver must store large task data in the object store and send a reference`,
      infrastructure: false,
    };
  } else {
    try {
      await ref.post('run', run, {
        dedupeId: `run-${jobId}-${index}-${attempt}`,
        signal: ctx.signal,
        // The task actor sleeps: it has never run, or passivated after its last attempt's
        // outcome. The wake consumer activates it; a hint would reach nobody.
        hint: false,
      });
      // The post wakes the task actor (the placer's wake consumer). An ask `ping` sent here as
      // well, to activate it sooner, cost an activation request, a BUSY answer and its error per
      // task: perf jobs' big job completed 433/s with it, 573/s without (medians of three), and
      // the small job's overhead per task did not grow.
      return;
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      failure = {
        error: `could not deliver task ${task.id} to its task actor: ${errorCode(err)}: ${err instanceof Error ? err.message : String(err)}`,
        infrastructure: isRetryable(err),
      };
    }
  }
  ctx.log.warn({ jobId, taskId: task.id, attempt, error: failure.error }, 'task not delivered');
  await ctx.refs.refOf(ctx.self).post(
    'outcome',
    {
      index,
      attempt,
      status: 'ERRORED',
      infrastructure: failure.infrastructure,
      budgetExhausted: false,
      error: failure.error,
      costUsd: 0,
      promptTokens: 0,
      completionTokens: 0,
      durationMs: 0,
      executions: 0,
    },
    { dedupeId: `outcome-${jobId}-${index}-${attempt}` },
  );
}

/** The driver's aggregate metrics, from the final task results (failures are logged, not fatal). */
async function collectExtra(
  rt: JobRuntime,
  s: JobState,
): Promise<Record<string, unknown> | undefined> {
  if (!s.spec || !rt.drivers.has(s.spec.kind)) return undefined;
  const driver = rt.drivers.get(s.spec.kind);
  if (!driver.collect) return undefined;
  try {
    const [results, records, ids, work] = await Promise.all([
      rt.store.taskResults(s.jobId),
      rt.store.taskRecords(s.jobId),
      rt.store.getTaskIds(s.jobId),
      s.generation > 1 ? rt.store.getWork(s.jobId, s.generation) : undefined,
    ]);
    const positionOf = positionsOf(s, work);
    const tasks: CollectedTask[] = [];
    for (let i = 0; i < s.total; i++) {
      // Every task is finished: a record, or in the stopped part of the work list.
      const r = records.get(i);
      const view = taskView(s, i, ids?.[i] ?? r?.id ?? `#${i}`, r, positionOf(i));
      const d = results.get(i);
      tasks.push({
        taskId: view.id,
        status: view.status,
        ...(view.score !== undefined ? { score: view.score } : {}),
        ...(d?.details ? { details: d.details } : {}),
      });
    }
    return await driver.collect(s.spec, tasks);
  } catch (err) {
    rt.log.warn({ err, jobId: s.jobId }, 'driver collect failed');
    return { collectError: err instanceof Error ? err.message : String(err) };
  }
}
