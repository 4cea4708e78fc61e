import { type ActorContext, defineActor, type UntypedActorRef } from '@troupe/actors';
import {
  errorCode,
  fromAbortSignal,
  invalidArgument,
  isBudgetExhausted,
  isCancelled,
  linkSignals,
  timeoutError,
} from '@troupe/proto';
import { z } from 'zod';
import { type CancelHold } from './cancel-watch';
import {
  type AnyJobDriver,
  isInfrastructureFailure,
  type TaskArtifacts,
  type TaskContext,
  type TaskGrade,
} from './job-driver';
import { type TaskResultRecord } from './job-record';
import {
  attemptResourceId,
  JOB_ACTOR_KIND,
  type JobRuntime,
  type JobRuntimeHolder,
  TASK_ACTOR_KIND,
} from './job-runtime';
import { type JobSpec } from './job-spec';
import { type TaskOutcome } from './job-state';
import { jobArtifactPrefix } from './job-store';

/** Messages of the task actor. */
export const TaskActorMessages = {
  /** Run one attempt of a task (posted by the job actor, dedupe id `run-<job>-<index>-<attempt>`). */
  run: z.object({
    jobId: z.string(),
    index: z.number().int().nonnegative(),
    taskId: z.string(),
    attempt: z.number().int().positive(),
    input: z.unknown(),
  }),
  /** Liveness probe (the job actor's watchdog ping activates a task actor whose wake was lost). */
  ping: z.object({}),
};

/** State of a task actor: how often the current attempt began executing (replays count). */
export const TaskActorStateSchema = z.object({
  attempt: z.number().int().nonnegative(),
  executions: z.number().int().nonnegative(),
  /** Resource ids of the task's earlier executions, oldest first (the last 16). */
  earlier: z.array(z.string()).optional(),
});
type TaskActorState = z.output<typeof TaskActorStateSchema>;

/** Options of {@link createTaskActor}. */
export interface TaskActorOptions {
  /** Passivate after this long without messages. @default 10000 */
  idleTimeoutMs?: number;
  /** Time allowed to `cleanup` an attempt. @default 60000 */
  cleanupTimeoutMs?: number;
  /**
   * How long an attempt runs before `started` is posted (at most a quarter of the task timeout).
   * @default START_REPORT_DELAY_MS
   */
  startReportDelayMs?: number;
}

/**
 * How long an attempt runs before its task actor posts `started` (at most a quarter of the task
 * timeout); one that ends sooner reports its start with its outcome.
 */
export const START_REPORT_DELAY_MS = 100;

/** Earlier executions' resource ids a task actor remembers. */
const MAX_EARLIER_RESOURCES = 16;

const ARTIFACT_NAME = /^[A-Za-z0-9._-][A-Za-z0-9._/-]{0,199}$/;

/**
 * The task actor (kind `job-task`, one per task of a job): runs one attempt per `run` message, in
 * its turn — `runTask`, `grade`, `cleanup` of the job's driver — under the task's timeout and the
 * job's cancellation (it watches the job's event subject for JOB_CANCEL_REQUESTED), writes the
 * full result to the jobs bucket and posts the outcome to the job actor. Task actors are placed
 * like any actor (hint `jobId`), so tasks spread over the hosts that host this kind. A turn
 * interrupted by a crash or shutdown is not committed: the next activation runs the attempt again
 * from scratch (and reports it, `executions` > 1).
 */
export function createTaskActor(holder: JobRuntimeHolder, options: TaskActorOptions = {}) {
  return defineActor({
    kind: TASK_ACTOR_KIND,
    state: TaskActorStateSchema,
    initialState: () => ({ attempt: 0, executions: 0 }),
    messages: TaskActorMessages,
    idleTimeoutMs: options.idleTimeoutMs ?? 10_000,
    maxAttempts: 5,
    // Garbage once its job has finished: the coordinator deletes its records after the retention.
    retireWithJob: true,
    handlers: {
      run: async (ctx, msg, state) => {
        const rt = holder.get();
        const previous =
          state.attempt > 0 && state.executions > 0
            ? attemptResourceId(msg.jobId, msg.index, state.attempt, state.executions)
            : undefined;
        const next: TaskActorState = {
          attempt: msg.attempt,
          executions: state.attempt === msg.attempt ? state.executions + 1 : 1,
          earlier: [...(state.earlier ?? []), ...(previous ? [previous] : [])].slice(
            -MAX_EARLIER_RESOURCES,
          ),
        };
        // Recorded before any work, so a replay after a crash knows it is one.
        await ctx.checkpoint(next);
        const job = ctx.refs.refOf({ kind: JOB_ACTOR_KIND, id: msg.jobId });
        const outcome = await runAttempt(ctx, rt, holder, job, msg, next, options);
        // One outcome per execution: a fenced execution's outcome must not take the place of
        // the new one's in the stream's duplicate window (the job keeps the latest execution's).
        await job.post('outcome', outcome, {
          dedupeId: `outcome-${msg.jobId}-${msg.index}-${msg.attempt}-${next.executions}`,
        });
        // Its work is done until the job sends another attempt: at a job's concurrency of
        // hundreds, activations left for the idle timeout were thousands (a subscription, timers
        // and memory each) and all passivated together after the job ended.
        ctx.passivateWhenIdle();
        return { state: next };
      },
      ping: () => ({ reply: {} }),
    },
  });
}

/** The task actor definition type. */
export type TaskActorDefinition = ReturnType<typeof createTaskActor>;

type RunMessage = z.output<(typeof TaskActorMessages)['run']>;

async function runAttempt(
  ctx: ActorContext<TaskActorState>,
  rt: JobRuntime,
  holder: JobRuntimeHolder,
  job: UntypedActorRef,
  msg: RunMessage,
  taskState: TaskActorState,
  options: TaskActorOptions,
): Promise<TaskOutcome> {
  const { executions } = taskState;
  const started = Date.now();
  const base = {
    index: msg.index,
    attempt: msg.attempt,
    hostId: rt.hostId,
    executions,
  };
  // The start is posted to the job (TASK_STARTED) once the attempt has run for a moment; one that
  // ends sooner reports it with its outcome (`reportedStart: false`). A job of short tasks posts
  // one message per attempt instead of two: the second cost a stream publish, the wake
  // consumer's delivery and ack, and the job actor's read and turn.
  let startReport: Promise<unknown> | undefined;
  let startTimer: NodeJS.Timeout | undefined;
  let runStarted = false;
  const reportStart = () => {
    startReport ??= job.post(
      'started',
      { index: msg.index, attempt: msg.attempt, hostId: rt.hostId, executions },
      { dedupeId: `started-${msg.jobId}-${msg.index}-${msg.attempt}-${executions}` },
    );
    // Awaited before the outcome is posted; a failure fails the turn there, as it did when the
    // report was awaited first.
    startReport.catch(() => undefined);
  };
  const outcome = (o: Partial<TaskOutcome> & Pick<TaskOutcome, 'status'>): TaskOutcome => ({
    infrastructure: false,
    budgetExhausted: false,
    costUsd: 0,
    promptTokens: 0,
    completionTokens: 0,
    durationMs: Date.now() - started,
    // Only an execution that began running has a start to report.
    reportedStart: !runStarted || startReport !== undefined,
    ...base,
    ...o,
  });

  let spec: JobSpec;
  let driver: AnyJobDriver;
  // Cancellation: the job actor records JOB_CANCEL_REQUESTED on the job's event subject, which
  // this process watches once per job for all of its tasks here (see CancelWatches).
  let hold: CancelHold;
  try {
    spec = await holder.spec(msg.jobId);
    driver = rt.drivers.get(spec.kind);
    hold = await holder.cancellations.acquire(msg.jobId);
  } catch (err) {
    if (ctx.signal.aborted) throw fromAbortSignal(ctx.signal);
    return outcome({
      status: 'ERRORED',
      infrastructure: isInfrastructureFailure(err),
      error: messageOf(err),
    });
  }
  const cancelled = hold.signal;
  const timeout = new AbortController();
  const timeoutMs = spec.taskTimeoutMs;
  // The error is made when the timeout fires, not for every attempt (its stack costs).
  const timer = setTimeout(
    () => timeout.abort(timeoutError(`task ${msg.taskId} attempt ${msg.attempt}`, timeoutMs)),
    timeoutMs,
  );
  const artifacts: string[] = [];
  const linked = linkSignals([ctx.signal, cancelled, timeout.signal]);
  const work = linked.signal;
  const tctx = taskContext(
    ctx,
    rt,
    job,
    msg,
    taskState,
    spec,
    work,
    started + timeoutMs,
    artifacts,
  );
  let grade: TaskGrade | undefined;
  let result: TaskOutcome;
  try {
    if (!cancelled.aborted) {
      runStarted = true;
      const delayMs = options.startReportDelayMs ?? START_REPORT_DELAY_MS;
      startTimer = setTimeout(reportStart, Math.min(delayMs, timeoutMs / 4));
    }
    let run: unknown;
    let runError: unknown;
    if (!cancelled.aborted) {
      try {
        run = await driver.runTask(tctx, msg.input);
      } catch (err) {
        runError = err;
      }
    }
    clearTimeout(timer);
    if (ctx.signal.aborted) throw fromAbortSignal(ctx.signal); // replayed by the next activation
    const timedOut = timeout.signal.aborted && !cancelled.aborted;
    if (cancelled.aborted) {
      result = outcome({ status: 'CANCELLED', error: 'cancelled: user' });
    } else if (runError !== undefined && !timedOut) {
      result = outcome({
        status: 'ERRORED',
        // A cancellation this task did not ask for (its own cancel, deadline and activation are
        // handled above) came from elsewhere: a sandbox actor fenced mid-call when its host was
        // declared dead, a host shutting down. Another attempt can succeed.
        infrastructure: isInfrastructureFailure(runError) || isCancelled(runError),
        budgetExhausted: isBudgetExhausted(runError),
        error: messageOf(runError),
      });
    } else {
      // Grade what exists, with a fresh deadline when the attempt timed out.
      const gradeLink = timedOut
        ? linkSignals([ctx.signal, cancelled, AbortSignal.timeout(rt.gradeTimeoutMs)])
        : undefined;
      const gctx = gradeLink
        ? taskContext(
            ctx,
            rt,
            job,
            msg,
            taskState,
            spec,
            gradeLink.signal,
            Date.now() + rt.gradeTimeoutMs,
            artifacts,
          )
        : tctx;
      try {
        grade = await driver.grade(gctx, msg.input, runError === undefined ? run : undefined);
        const score = grade.score ?? (grade.passed ? 1 : 0);
        result = outcome({
          status: timedOut ? 'TIMED_OUT' : grade.passed ? 'PASSED' : 'FAILED',
          score,
          costUsd: grade.costUsd ?? 0,
          promptTokens: grade.promptTokens ?? 0,
          completionTokens: grade.completionTokens ?? 0,
          stopReason: grade.stopReason ?? (timedOut ? 'timeout' : 'finished'),
          ...(timedOut ? { error: (timeout.signal.reason as Error).message } : {}),
        });
      } catch (err) {
        if (ctx.signal.aborted) throw fromAbortSignal(ctx.signal);
        result = cancelled.aborted
          ? outcome({ status: 'CANCELLED', error: 'cancelled: user' })
          : outcome({
              status: 'ERRORED',
              infrastructure: isInfrastructureFailure(err),
              budgetExhausted: isBudgetExhausted(err),
              error: `grading failed: ${messageOf(err)}`,
            });
      } finally {
        gradeLink?.dispose();
      }
    }
  } finally {
    clearTimeout(timer);
    clearTimeout(startTimer);
    linked.dispose();
    hold.release();
    if (driver.cleanup) {
      // A fresh signal: the work's is aborted when we got here by cancellation or timeout. Its
      // timer is cleared when the cleanup ends (`AbortSignal.timeout`'s lived out its full
      // minute, one per attempt of a busy job).
      const cleanupTimeout = new AbortController();
      const cleanupTimer = setTimeout(
        () =>
          cleanupTimeout.abort(
            new DOMException('The operation was aborted due to timeout', 'TimeoutError'),
          ),
        options.cleanupTimeoutMs ?? 60_000,
      );
      const cleanupSignal = cleanupTimeout.signal;
      const cctx = taskContext(
        ctx,
        rt,
        job,
        msg,
        taskState,
        spec,
        cleanupSignal,
        Date.now(),
        artifacts,
      );
      await driver
        .cleanup(cctx, msg.input)
        .catch((err: unknown) => {
          ctx.log.warn({ err, jobId: msg.jobId, taskId: msg.taskId }, 'task cleanup failed');
        })
        .finally(() => clearTimeout(cleanupTimer));
    }
  }
  const record: TaskResultRecord = {
    taskId: msg.taskId,
    index: msg.index,
    attempt: msg.attempt,
    execution: executions,
    status: result.status,
    ...(result.score !== undefined ? { score: result.score } : {}),
    costUsd: result.costUsd,
    tokens: result.promptTokens + result.completionTokens,
    durationMs: result.durationMs,
    stopReason: result.stopReason ?? '',
    error: result.error ?? '',
    artifacts,
    ...(grade?.details ? { details: grade.details } : {}),
  };
  if (!(await rt.store.putTaskResult(msg.jobId, record))) {
    // A newer execution (this one was fenced) or attempt has written its record: the job keeps
    // that one's outcome, and the results show it.
    ctx.log.info(
      { jobId: msg.jobId, taskId: msg.taskId, attempt: msg.attempt, execution: record.execution },
      'task result of a superseded execution not recorded',
    );
  }
  if (result.status === 'ERRORED') {
    // Info: one line per failed attempt, which is what a fault's recovery time hangs on (a retry
    // the job actor schedules is not logged otherwise).
    ctx.log.info(
      {
        jobId: msg.jobId,
        taskId: msg.taskId,
        attempt: msg.attempt,
        infrastructure: result.infrastructure === true,
        error: result.error,
      },
      'task attempt errored',
    );
  }
  // The start first: the job never sees an attempt end before it began.
  if (startReport) await startReport;
  return result;
}

function taskContext(
  ctx: ActorContext<TaskActorState>,
  rt: JobRuntime,
  job: UntypedActorRef,
  msg: RunMessage,
  taskState: TaskActorState,
  spec: JobSpec,
  signal: AbortSignal,
  deadlineUnixMs: number,
  artifacts: string[],
): TaskContext {
  const prefix = `${jobArtifactPrefix(msg.jobId)}tasks/${msg.taskId}/`;
  const pathOf = (name: string): string => {
    if (!ARTIFACT_NAME.test(name) || name.split('/').includes('..')) {
      throw invalidArgument('artifact name', 'must match [A-Za-z0-9._/-]{1,200} without ..', name);
    }
    return `${prefix}${name}`;
  };
  const store: TaskArtifacts = {
    pathOf,
    adopt: (name) => {
      const path = pathOf(name);
      if (!artifacts.includes(path)) artifacts.push(path);
      return path;
    },
    put: async (name, data, opts = {}) => {
      const path = pathOf(name);
      const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
      await rt.store.putArtifact(path, bytes, opts.contentType ?? 'application/octet-stream');
      if (!artifacts.includes(path)) artifacts.push(path);
      return path;
    },
  };
  return {
    jobId: msg.jobId,
    taskId: msg.taskId,
    index: msg.index,
    attempt: msg.attempt,
    spec,
    signal,
    deadlineUnixMs,
    refs: ctx.refs,
    log: ctx.log.child({ jobId: msg.jobId, taskId: msg.taskId, attempt: msg.attempt }),
    hostId: rt.hostId,
    execution: taskState.executions,
    resourceId: attemptResourceId(msg.jobId, msg.index, msg.attempt, taskState.executions),
    staleResourceIds: Array.from({ length: taskState.executions - 1 }, (_, i) =>
      attemptResourceId(msg.jobId, msg.index, msg.attempt, i + 1),
    ),
    earlierResourceIds: [...(taskState.earlier ?? [])],
    // The activation's own signal: fenced, or the host's shutdown grace over (see the check
    // after runTask: the attempt is replayed by the next activation).
    interrupted: () => ctx.signal.aborted,
    ...(spec.budget ? { budgetScope: `job:${msg.jobId}` } : {}),
    nats: { connection: rt.nc, cluster: rt.cluster, replicas: rt.replicas },
    artifacts: store,
    progress: (p) => {
      job.tell('progress', { index: msg.index, attempt: msg.attempt, ...p });
    },
  };
}

function messageOf(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return `${errorCode(err)}: ${text}`;
}
