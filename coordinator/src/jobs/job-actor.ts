import { type ActorContext, defineActor } from '@troupe/actors';
import { errorCode, invalidArgument, isRetryable, TroupeError } from '@troupe/proto';
import { z } from 'zod';
import { BudgetLedger } from '../budget/budget-ledger';
import { cancelReminder, remindAt } from '../reminders';
import {
  type CollectedTask,
  MAX_TASKS_PER_JOB,
  type PlannedTask,
  TASK_ID_PATTERN,
  TASK_ID_RULE,
} from './job-driver';
import { type JobEventDraft, type JobEventRecord } from './job-event';
import { aggregateOf, recordOf } from './job-record';
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
  positionsOf,
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
   * `taskTimeoutMs` after an attempt was dispatched (a durable reminder): an attempt whose task
   * actor never started ends TIMED_OUT.
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
  const now = () => Date.now();
  return defineActor({
    kind: JOB_ACTOR_KIND,
    state: JobStateSchema,
    initialState: (id) => emptyJobState(id),
    messages: JobActorMessages,
    idleTimeoutMs: options.idleTimeoutMs ?? 300_000,
    maxAttempts: 5,
    handlers: {
      start: async (ctx, msg, state) => {
        if (state.phase !== 'NEW') return; // a repeated submission
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
        return { state: await carryOut(ctx, rt, holder, state, result) };
      },
      resume: async (ctx, msg, state) => {
        const rt = holder.get();
        holder.forget(state.jobId);
        if (!isFinalPhase(state.phase)) return;
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
        return { state: await carryOut(ctx, rt, holder, state, result) };
      },
      started: async (ctx, msg, state) => {
        const rt = holder.get();
        const result = JobTransitions.started(state, msg, now());
        const before = state.active.find((t) => t.index === msg.index);
        if (result.state !== state && before?.status === 'QUEUED') {
          // Its start deadline no longer matters: not left armed (and stored) until it fires.
          await cancelReminder(rt.reminders, startDeadlineId(state.jobId, msg.index, msg.attempt));
        }
        return { state: await carryOut(ctx, rt, holder, state, result) };
      },
      outcome: async (ctx, msg, state) => {
        const rt = holder.get();
        const work = await holder.work(state.jobId, state.generation);
        const result = JobTransitions.outcome(state, msg, now(), work);
        const before = state.active.find((t) => t.index === msg.index);
        if (result.state !== state && before?.status === 'QUEUED') {
          // Ended without starting (not delivered): its start deadline no longer matters.
          await cancelReminder(rt.reminders, startDeadlineId(state.jobId, msg.index, msg.attempt));
        }
        return { state: await carryOut(ctx, rt, holder, state, result) };
      },
      progress: async (ctx, msg, state) => {
        if (isFinalPhase(state.phase)) return;
        // Best effort: a report may overtake the `started` post or trail the outcome (the task
        // has left the state then: its record tells the attempt).
        const t =
          state.active.find((a) => a.index === msg.index) ??
          (await holder.get().store.taskRecordsAt(state.jobId, [msg.index])).get(msg.index);
        if (!t || t.attempts !== msg.attempt) return;
        const event: JobEventDraft =
          msg.message !== undefined
            ? { type: 'LOG', taskId: t.id, message: msg.message, payload: { attempt: msg.attempt } }
            : {
                type: 'TASK_PROGRESS',
                taskId: t.id,
                message: `task ${t.id} step ${msg.step ?? '?'}`,
                payload: {
                  // Driver keys first: the standard ones below always win.
                  ...(msg.data ?? {}),
                  attempt: msg.attempt,
                  ...(msg.step !== undefined ? { step: msg.step } : {}),
                  ...(msg.tokens !== undefined ? { tokens: msg.tokens } : {}),
                  ...(msg.costUsd !== undefined ? { costUsd: msg.costUsd } : {}),
                },
              };
        const result: Result = {
          state,
          effects: {
            events: [event],
            dispatch: [],
            retries: [],
            finals: [],
            recordChanged: false,
            finished: false,
          },
        };
        return { state: await carryOut(ctx, holder.get(), holder, state, result, true) };
      },
      retry: async (ctx, msg, state) => {
        const work = await holder.work(state.jobId, state.generation);
        const result = JobTransitions.retryDue(state, msg, now(), work);
        return { state: await carryOut(ctx, holder.get(), holder, state, result) };
      },
      startDeadline: async (ctx, msg, state) => {
        const rt = holder.get();
        const timeoutMs = state.spec?.taskTimeoutMs ?? 0;
        const work = await holder.work(state.jobId, state.generation);
        const result = JobTransitions.startDeadline(state, { ...msg, timeoutMs }, now(), work);
        const t = result.effects.finals.find((f) => f.index === msg.index);
        if (result.state !== state && t) {
          ctx.log.warn(
            { jobId: state.jobId, taskId: t.id, attempt: msg.attempt },
            'task never started',
          );
          // The task actor never ran, so nothing else writes the task's result.
          await rt.store.putTaskResult(state.jobId, {
            taskId: t.id,
            index: msg.index,
            attempt: msg.attempt,
            status: 'TIMED_OUT',
            costUsd: 0,
            tokens: 0,
            durationMs: timeoutMs,
            stopReason: 'timeout',
            error: t.error ?? '',
            artifacts: [],
          });
        }
        return { state: await carryOut(ctx, rt, holder, state, result) };
      },
      cancel: async (ctx, msg, state) => {
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
        return { state: next, reply: recordOf(next, now()) };
      },
      cancelDeadline: async (ctx, _msg, state) => {
        const result = JobTransitions.cancelDeadline(state, now());
        return { state: await carryOut(ctx, holder.get(), holder, state, result) };
      },
      snapshot: (_ctx, _msg, state) => ({ reply: state }),
      ping: (ctx, _msg, state) => {
        if (state.phase !== 'RUNNING') return { reply: {} };
        // Not awaited: a task actor in a long turn answers BUSY; a sleeping one with a pending
        // `run` is activated by the ask and then processes it.
        const rt = holder.get();
        state.active.forEach((t) => {
          if (t.status !== 'QUEUED' && t.status !== 'RUNNING') return;
          const addr = { kind: TASK_ACTOR_KIND, id: taskActorId(state.jobId, t.index) };
          void revive(rt.directory, addr, ctx.log)
            .then(() =>
              ctx.refs
                .refOf(addr)
                .withHints({ jobId: state.jobId })
                .ask('ping', {}, { timeoutMs: 5_000, requireIdle: true }),
            )
            .catch(() => undefined);
        });
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
    const plan = await driver.plan(spec, {
      jobId,
      signal: ctx.signal,
      log: ctx.log,
      nats: { connection: rt.nc, cluster: rt.cluster, replicas: rt.replicas },
      payloadPrefix: jobPayloadPrefix(jobId),
    });
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
    // A shutdown or fencing: the `start` message is replayed by the next activation.
    if (ctx.signal.aborted) throw err;
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

/**
 * Carries out a transition's effects — job record, events, task dispatches, retry reminders, all
 * idempotent — and returns the state to commit (with its event counter advanced).
 */
async function carryOut(
  ctx: ActorContext<JobState>,
  rt: JobRuntime,
  holder: JobRuntimeHolder,
  prev: JobState,
  result: Result,
  eventsOnly = false,
): Promise<JobState> {
  const { effects } = result;
  if (result.state === prev && effects.events.length === 0) return prev;
  const t = Date.now();
  const next: JobState = { ...result.state };
  const drafts = [...effects.events];
  // Task records first: the driver's `collect` reads them, and results read after a count that
  // includes a task find its record.
  if (effects.finals.length > 0) {
    await rt.store.putTaskRecords(next.jobId, next.generation, effects.finals);
  }
  if (effects.finished) {
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
  const writeRecord = !eventsOnly && next.spec && (effects.recordChanged || effects.finished);
  if (effects.finished) {
    // The record first: a watcher that sees JOB_FINISHED and then reads the job finds it final.
    if (writeRecord) await rt.store.putJob(recordOf(next, t));
    await rt.events.append(events);
  } else {
    await Promise.all([
      writeRecord ? rt.store.putJob(recordOf(next, t)) : undefined,
      rt.events.append(events),
    ]);
  }
  if (effects.dispatch.length > 0) {
    const plan = await holder.plan(next.jobId);
    await Promise.all(
      effects.dispatch.map(async ({ index, attempt }) => {
        const task = plan[index];
        if (!task) throw new TroupeError('INTERNAL', `job ${next.jobId} has no task ${index}`);
        if (next.spec) {
          // The job's own clock on the attempt: if its task actor never starts (the `run` is never
          // delivered or the actor cannot be activated), the attempt still times out.
          await remindAt(
            rt.nc,
            rt.cluster,
            ctx.self,
            t + next.spec.taskTimeoutMs,
            'startDeadline',
            { index, attempt },
            { id: startDeadlineId(next.jobId, index, attempt) },
          );
        }
        await dispatch(ctx, rt, next.jobId, index, task, attempt);
      }),
    );
  }
  for (const r of effects.retries) {
    await remindAt(
      rt.nc,
      rt.cluster,
      ctx.self,
      r.atMs,
      'retry',
      { index: r.index, attempt: r.attempt },
      { id: `retry-${next.jobId}-${r.index}-${r.attempt}` },
    );
  }
  if (effects.finished) {
    holder.forget(next.jobId);
    // What the plan stored for its tasks (task payloads) is not kept: best effort, a leftover only
    // takes room.
    await rt.store
      .deletePrefix(jobPayloadPrefix(next.jobId))
      .catch((err: unknown) => ctx.log.warn({ err }, 'could not delete the job payloads'));
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
      });
      // Activate the task actor now rather than when the wake-on-post consumer gets to it (an
      // ask to a sleeping actor asks for its activation; the ask itself is answered BUSY once
      // the actor runs the `run` turn). Not awaited, best effort.
      ref.ask('ping', {}, { timeoutMs: 10_000, requireIdle: true }).catch(() => undefined);
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

/** Id of the start-deadline reminder of an attempt. */
function startDeadlineId(jobId: string, index: number, attempt: number): string {
  return compactId(['start', jobId, index, attempt], 128);
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
