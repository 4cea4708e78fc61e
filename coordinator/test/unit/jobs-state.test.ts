import {
  countTasks,
  emptyJobState,
  type JobEffects,
  type JobSpec,
  JobSpecSchema,
  type JobState,
  JobTransitions,
  type JobWork,
  listWork,
  MAX_STOP_EVENTS,
  planWork,
  positionsOf,
  type TaskEntry,
  type TaskOutcome,
  TaskOutcomeSchema,
  type TaskRecord,
  taskView,
  type WorkList,
} from '@troupe/coordinator';

const T0 = 1_700_000_000_000;

function spec(over: Record<string, unknown> = {}): JobSpec {
  return JobSpecSchema.parse({ kind: 'shell-tasks', tasks: [], concurrency: 2, ...over });
}

function outcome(o: Partial<TaskOutcome> & Pick<TaskOutcome, 'index' | 'status'>): TaskOutcome {
  return TaskOutcomeSchema.parse({ attempt: 1, ...o });
}

function types(fx: JobEffects): string[] {
  return fx.events.map((e) => e.type);
}

/** `state` and everything in it made read-only, so a change of it throws. */
function frozen(state: JobState): JobState {
  for (const t of state.active) Object.freeze(t);
  Object.freeze(state.active);
  Object.freeze(state.done);
  Object.freeze(state.spent);
  return Object.freeze(state);
}

/**
 * A job as its actor runs it, without NATS: the state, the task records its effects write, and
 * the work list of each generation. `tasks` reads every task the way results do.
 */
class Job {
  state!: JobState;
  effects: JobEffects;
  readonly records = new Map<number, TaskRecord>();
  /** Times each task became final (its record written). */
  readonly finals = new Map<number, number>();
  private work: JobWork;
  private rerun?: WorkList;

  constructor(
    readonly ids: string[],
    readonly spec: JobSpec,
  ) {
    this.work = planWork(ids);
    this.effects = this.apply(
      JobTransitions.start(emptyJobState('j1'), {
        spec,
        createdUnixMs: T0,
        taskIds: ids,
        now: T0,
      }),
    );
  }

  static of(n: number, over: Record<string, unknown> = {}): Job {
    return new Job(
      Array.from({ length: n }, (_, i) => `t${i}`),
      spec(over),
    );
  }

  private apply(r: { state: JobState; effects: JobEffects }): JobEffects {
    for (const t of r.effects.finals) {
      this.records.set(t.index, { ...t, generation: r.state.generation });
      this.finals.set(t.index, (this.finals.get(t.index) ?? 0) + 1);
    }
    // Transitions are pure: the next one gets this state frozen, entries and all, and throws if
    // it changes what it was given (a batch turn that fails is retried from the state before it).
    this.state = frozen(r.state);
    this.effects = r.effects;
    return r.effects;
  }

  outcome(o: Partial<TaskOutcome> & Pick<TaskOutcome, 'index' | 'status'>, now = T0): JobEffects {
    return this.apply(JobTransitions.outcome(this.state, outcome(o), now, this.work));
  }

  started(index: number, hostId = 'h', executions = 1, attempt = 1): JobEffects {
    return this.apply(
      JobTransitions.started(this.state, { index, attempt, hostId, executions }, T0),
    );
  }

  retryDue(index: number, attempt: number, now: number): JobEffects {
    return this.apply(JobTransitions.retryDue(this.state, { index, attempt }, now, this.work));
  }

  startDeadline(index: number, attempt: number, timeoutMs: number, now: number): JobEffects {
    return this.apply(
      JobTransitions.startDeadline(this.state, { index, attempt, timeoutMs }, now, this.work),
    );
  }

  startSweep(atMs: number, now: number): JobEffects {
    return this.apply(JobTransitions.startSweep(this.state, { atMs }, now, this.work));
  }

  cancel(reason: string, now = T0): JobEffects {
    return this.apply(JobTransitions.cancel(this.state, { reason }, now, this.work));
  }

  cancelDeadline(now: number): JobEffects {
    return this.apply(JobTransitions.cancelDeadline(this.state, now));
  }

  /** What the actor's `resume` does: the work list from the records, then the transition. */
  resume(next: JobSpec, now: number): JobEffects {
    const rerun: WorkList = { indices: [], attempts: [] };
    for (let i = 0; i < this.state.total; i++) {
      const r = this.records.get(i);
      if (!r || r.status === 'ERRORED' || r.status === 'CANCELLED') {
        rerun.indices.push(i);
        rerun.attempts.push(r?.attempts ?? 0);
      }
    }
    this.rerun = rerun;
    this.work = listWork(this.ids, rerun);
    return this.apply(
      JobTransitions.resume(
        this.state,
        { spec: next, rerun: rerun.indices.length },
        now,
        this.work,
      ),
    );
  }

  task(i: number): TaskEntry {
    const position = positionsOf(this.state, this.rerun)(i);
    return taskView(this.state, i, this.ids[i] as string, this.records.get(i), position);
  }

  statuses(): string[] {
    return this.ids.map((_, i) => this.task(i).status);
  }
}

describe('job transitions', () => {
  it('queues, starts and dispatches no more tasks than the concurrency', () => {
    const job = Job.of(5);
    expect(job.state.phase).toBe('RUNNING');
    expect(job.effects.dispatch).toEqual([
      { index: 0, attempt: 1 },
      { index: 1, attempt: 1 },
    ]);
    expect(types(job.effects)).toEqual(['JOB_QUEUED', 'JOB_STARTED', 'TASK_QUEUED', 'TASK_QUEUED']);
    expect(countTasks(job.state)).toMatchObject({ total: 5, running: 2, pending: 5, done: 0 });
    expect(job.statuses()).toEqual(['QUEUED', 'QUEUED', 'PENDING', 'PENDING', 'PENDING']);
  });

  it('times out at its start deadline an attempt whose task actor never started, only that', () => {
    const job = Job.of(3, { taskTimeoutMs: 20_000 });
    job.started(1);
    // Task 0 never started: it ends TIMED_OUT, its slot goes to task 2.
    const late = job.startDeadline(0, 1, 20_000, T0 + 20_000);
    expect(job.task(0)).toMatchObject({ status: 'TIMED_OUT', attempts: 1 });
    expect(job.task(0).error).toMatch(/did not start within taskTimeoutMs \(20000 ms\)/);
    expect(late.dispatch).toEqual([{ index: 2, attempt: 1 }]);
    // Task 1 started: its own actor enforces the timeout. A stale attempt is ignored too.
    const before = job.state;
    job.startDeadline(1, 1, 20_000, T0 + 20_000);
    expect(job.state).toBe(before);
    job.startDeadline(2, 2, 20_000, T0 + 20_000);
    expect(job.state).toBe(before);
  });

  it('arms one start sweep per job, not a reminder per attempt, and times out only overdue attempts', () => {
    const job = Job.of(4, { taskTimeoutMs: 20_000 });
    // The first dispatches arm the sweep at their deadline; the ones after it arm nothing.
    expect(job.effects.startSweep).toBe(T0 + 20_000);
    expect(job.state.startSweepAtMs).toBe(T0 + 20_000);
    job.started(0);
    const later = job.outcome({ index: 0, status: 'PASSED' }, T0 + 5_000);
    expect(later.dispatch).toEqual([{ index: 2, attempt: 1 }]);
    expect(later.startSweep).toBeUndefined();
    // A stale sweep (not the armed one) changes nothing.
    const before = job.state;
    job.startSweep(T0 + 1, T0 + 20_000);
    expect(job.state).toBe(before);
    // Due: task 1 (dispatched at T0, never started) ends TIMED_OUT; task 2 (dispatched at
    // T0 + 5 s) is not overdue yet, so the sweep is armed again for its deadline.
    const due = job.startSweep(T0 + 20_000, T0 + 20_000);
    expect(job.task(1)).toMatchObject({ status: 'TIMED_OUT', attempts: 1 });
    expect(job.task(1).error).toMatch(/did not start within taskTimeoutMs \(20000 ms\)/);
    expect(job.task(2).status).toBe('QUEUED');
    expect(due.finals.map((f) => f.index)).toEqual([1]);
    expect(due.dispatch).toEqual([{ index: 3, attempt: 1 }]);
    expect(due.startSweep).toBe(T0 + 25_000);
    expect(job.state.startSweepAtMs).toBe(T0 + 25_000);
    // Every attempt left started: the sweep finds nothing overdue and is not armed again.
    job.started(2);
    job.started(3);
    const idle = job.startSweep(T0 + 25_000, T0 + 25_000);
    expect(idle.finals).toEqual([]);
    expect(idle.startSweep).toBeUndefined();
    expect(job.state.startSweepAtMs).toBeUndefined();
    // Its deadline met, a retried attempt's dispatch arms it again.
    const retry = job.outcome(
      { index: 2, status: 'ERRORED', infrastructure: true, error: 'flaky' },
      T0 + 30_000,
    );
    expect(retry.retries).toHaveLength(1);
    job.retryDue(2, 2, T0 + 40_000);
    expect(job.effects.dispatch).toEqual([{ index: 2, attempt: 2 }]);
    expect(job.effects.startSweep).toBe(T0 + 60_000);
  });

  it('finishes an empty plan at once, and a failed plan as FAILED', () => {
    const empty = Job.of(0);
    expect(empty.state.phase).toBe('SUCCEEDED');
    expect(empty.effects.finished).toBe(true);
    const failed = JobTransitions.start(emptyJobState('j1'), {
      spec: spec(),
      createdUnixMs: T0,
      taskIds: undefined,
      planError: 'no such suite',
      now: T0,
    });
    expect(failed.state.phase).toBe('FAILED');
    expect(failed.state.reason).toBe('planning failed: no such suite');
  });

  it('hands a freed slot to the next pending task and finishes when all are graded', () => {
    const job = Job.of(3);
    let fx = job.outcome({ index: 0, status: 'PASSED', score: 1 });
    expect(fx.dispatch).toEqual([{ index: 2, attempt: 1 }]);
    expect(types(fx)).toEqual(['TASK_GRADED', 'TASK_QUEUED']);
    expect(fx.finals.map((t) => t.index)).toEqual([0]);
    job.outcome({ index: 1, status: 'FAILED', score: 0 }, T0 + 5);
    expect(job.state.phase).toBe('RUNNING');
    fx = job.outcome({ index: 2, status: 'TIMED_OUT', score: 0 }, T0 + 9);
    // Graded failures and timeouts are results: the job still succeeded.
    expect(job.state.phase).toBe('SUCCEEDED');
    expect(fx.finished).toBe(true);
    expect(countTasks(job.state)).toMatchObject({ passed: 1, failed: 1, timedOut: 1 });
    expect(job.statuses()).toEqual(['PASSED', 'FAILED', 'TIMED_OUT']);
    expect(job.task(0).score).toBe(1);
  });

  it('retries infrastructure failures with doubling backoff, never graded failures', () => {
    const job = Job.of(2, { retries: { max: 2, backoffMs: 100, maxBackoffMs: 150 } });
    let fx = job.outcome({
      index: 0,
      status: 'ERRORED',
      infrastructure: true,
      error: 'docker down',
    });
    expect(job.task(0).status).toBe('BACKOFF');
    expect(fx.retries).toEqual([{ index: 0, attempt: 2, atMs: T0 + 100 }]);
    expect(types(fx)).toEqual(['TASK_RETRY']);
    // The slot of the backing-off task is free for others (none pending here).
    expect(fx.dispatch).toEqual([]);
    expect(fx.finals).toEqual([]);
    fx = job.retryDue(0, 2, T0 + 100);
    expect(fx.dispatch).toEqual([{ index: 0, attempt: 2 }]);
    fx = job.outcome(
      { index: 0, attempt: 2, status: 'ERRORED', infrastructure: true, error: 'again' },
      T0 + 200,
    );
    expect(fx.retries).toEqual([{ index: 0, attempt: 3, atMs: T0 + 350 }]);
    job.retryDue(0, 3, T0 + 350);
    fx = job.outcome(
      { index: 0, attempt: 3, status: 'ERRORED', infrastructure: true, error: 'still' },
      T0 + 400,
    );
    // Out of retries: errored for good.
    expect(job.task(0)).toMatchObject({ status: 'ERRORED', attempts: 3 });
    expect(fx.retries).toEqual([]);
    // A graded failure of the other task is never retried.
    fx = job.outcome({ index: 1, status: 'FAILED' }, T0 + 500);
    expect(fx.retries).toEqual([]);
    expect(job.state.phase).toBe('FAILED');
    expect(job.state.reason).toMatch(/^1 of 2 tasks errored \(first: t0: still/);
  });

  it('keeps the last failed attempt’s error after a graded retry', () => {
    const job = Job.of(1, { retries: { max: 1, backoffMs: 100 } });
    job.outcome({
      index: 0,
      status: 'ERRORED',
      infrastructure: true,
      error: 'TIMEOUT: no window',
    });
    expect(job.task(0).error).toBe('TIMEOUT: no window');
    job.retryDue(0, 2, T0 + 100);
    const fx = job.outcome({ index: 0, attempt: 2, status: 'FAILED' }, T0 + 200);
    expect(job.task(0).status).toBe('FAILED');
    expect(job.task(0).error).toBe('TIMEOUT: no window');
    expect(types(fx)).toContain('TASK_GRADED');
    expect(job.state.phase).not.toBe('RUNNING');
  });

  it('does not retry non-infrastructure errors', () => {
    const job = Job.of(1);
    job.outcome({ index: 0, status: 'ERRORED', infrastructure: false, error: 'bad task' });
    expect(job.task(0).status).toBe('ERRORED');
    expect(job.state.phase).toBe('FAILED');
  });

  it('ignores stale and duplicate outcomes', () => {
    const job = Job.of(1);
    const start = job.state;
    job.outcome({ index: 0, status: 'PASSED' });
    const once = job.state;
    const fx = job.outcome({ index: 0, status: 'FAILED' });
    expect(job.state).toBe(once);
    expect(fx.events).toEqual([]);
    expect(job.finals.get(0)).toBe(1);
    const stale = JobTransitions.outcome(
      start,
      outcome({ index: 0, attempt: 7, status: 'PASSED' }),
      T0,
      planWork(job.ids),
    );
    expect(stale.state).toBe(start);
  });

  it('cancels: pending tasks at once, running ones when they report, then the job', () => {
    const job = Job.of(4);
    const c = job.cancel('user', T0 + 10);
    expect(types(c)).toEqual(['JOB_CANCEL_REQUESTED', 'TASK_FINISHED', 'TASK_FINISHED']);
    expect(c.events.slice(1).map((e) => e.taskId)).toEqual(['t2', 't3']);
    expect(job.state.phase).toBe('RUNNING');
    expect(job.statuses()).toEqual(['QUEUED', 'QUEUED', 'CANCELLED', 'CANCELLED']);
    expect(countTasks(job.state)).toMatchObject({ cancelled: 2, running: 2, pending: 2 });
    // No new dispatch after a cancel, even when a slot frees up.
    const a = job.outcome({ index: 0, status: 'CANCELLED' }, T0 + 20);
    expect(a.dispatch).toEqual([]);
    // An infrastructure failure during cancellation is not retried.
    const b = job.outcome({ index: 1, status: 'ERRORED', infrastructure: true }, T0 + 30);
    expect(b.retries).toEqual([]);
    expect(job.state.phase).toBe('CANCELLED');
    expect(job.state.reason).toBe('user');
    expect(job.statuses()).toEqual(['CANCELLED', 'CANCELLED', 'CANCELLED', 'CANCELLED']);
    // Cancelling a finished job changes nothing.
    const done = job.state;
    job.cancel('again');
    expect(job.state).toBe(done);
  });

  it('writes off running tasks that do not stop within the grace period', () => {
    const job = Job.of(2);
    job.cancel('user');
    job.cancelDeadline(T0 + 30_000);
    expect(job.state.phase).toBe('CANCELLED');
    expect(job.statuses()).toEqual(['CANCELLED', 'CANCELLED']);
    expect(job.state.active).toEqual([]);
  });

  it('stops at an exhausted budget and fails the job', () => {
    const job = Job.of(3, { budget: { usd: 1 }, concurrency: 1 });
    const fx = job.outcome({ index: 0, status: 'PASSED', costUsd: 1.5 });
    expect(types(fx)).toContain('BUDGET');
    expect(fx.dispatch).toEqual([]);
    expect(job.state.phase).toBe('FAILED');
    expect(job.state.reason).toMatch(/^budget exhausted: spent \$1\.5000 of \$1/);
    expect(job.statuses()).toEqual(['PASSED', 'ERRORED', 'ERRORED']);
    expect(job.task(1).error).toBe('not run: the job budget is exhausted');
  });

  it('resumes a finished job, re-running only tasks without a grade', () => {
    const job = Job.of(3, { concurrency: 3, retries: { max: 0 } });
    job.outcome({ index: 0, status: 'PASSED' });
    job.outcome({ index: 1, status: 'ERRORED', infrastructure: true });
    job.outcome({ index: 2, status: 'FAILED' });
    expect(job.state.phase).toBe('FAILED');
    const fx = job.resume(spec({ retries: { max: 0 } }), T0 + 1);
    expect(job.state.phase).toBe('RUNNING');
    expect(fx.dispatch).toEqual([{ index: 1, attempt: 2 }]);
    expect(types(fx)).toEqual(['JOB_RESUMED', 'TASK_QUEUED']);
    expect(job.statuses()).toEqual(['PASSED', 'QUEUED', 'FAILED']);
    expect(countTasks(job.state)).toMatchObject({ passed: 1, failed: 1, errored: 0, pending: 1 });
    job.outcome({ index: 1, attempt: 2, status: 'PASSED' }, T0 + 2);
    expect(job.state.phase).toBe('SUCCEEDED');
    expect(job.statuses()).toEqual(['PASSED', 'PASSED', 'FAILED']);
  });

  it('records the host and re-executions of a started task', () => {
    const job = Job.of(1);
    const fx = job.started(0, 'h1', 2);
    expect(job.task(0)).toMatchObject({ status: 'RUNNING', hostId: 'h1', executions: 2 });
    expect(fx.events[0]?.payload).toEqual({ attempt: 1, host: 'h1', execution: 2 });
  });

  it('ignores the outcome of an execution older than the latest that started', () => {
    const job = Job.of(1);
    job.started(0, 'h1', 1);
    // The first execution's host went quiet; the task actor was moved and ran it again.
    job.started(0, 'h2', 2);
    const state = job.state;
    // The fenced first execution reports late, with the error of its replaced sandbox.
    const fx = job.outcome(
      {
        index: 0,
        status: 'ERRORED',
        executions: 1,
        error: 'NOT_FOUND: sandbox sh-x-e1 was destroyed',
      },
      T0 + 10,
    );
    expect(job.state).toBe(state);
    expect(fx.events).toEqual([]);
    job.outcome({ index: 0, status: 'PASSED', executions: 2 }, T0 + 20);
    expect(job.task(0)).toMatchObject({ status: 'PASSED', executions: 2 });
    expect(job.task(0).error).toBeUndefined();
  });

  it('records a start the task actor reported only with its outcome, then the outcome', () => {
    const job = Job.of(3);
    // Task 0 ended before its start report was due: TASK_STARTED comes with the grade.
    const fx = job.outcome(
      { index: 0, status: 'PASSED', hostId: 'h1', executions: 1, reportedStart: false },
      T0 + 5,
    );
    expect(types(fx)).toEqual(['TASK_STARTED', 'TASK_GRADED', 'TASK_QUEUED']);
    expect(fx.events[0]).toMatchObject({
      taskId: 't0',
      timeUnixMs: T0 + 5,
      payload: { attempt: 1, host: 'h1', execution: 1 },
    });
    expect(job.task(0)).toMatchObject({ status: 'PASSED', hostId: 'h1', executions: 1 });
    expect(fx.dispatch).toEqual([{ index: 2, attempt: 1 }]);
    // A start already reported is not recorded twice.
    job.started(1, 'h2');
    const again = job.outcome({ index: 1, status: 'FAILED', reportedStart: false }, T0 + 6);
    expect(types(again)).toEqual(['TASK_GRADED']);
    // Nor is a stale outcome's (the attempt is over).
    const stale = job.outcome({ index: 0, status: 'PASSED', reportedStart: false }, T0 + 7);
    expect(stale.events).toEqual([]);
    expect(job.task(0)).toMatchObject({ status: 'PASSED', attempts: 1 });
  });

  it('takes an outcome without reportedStart (an older task actor) as one whose start was posted', () => {
    expect(TaskOutcomeSchema.parse({ index: 0, attempt: 1, status: 'PASSED' }).reportedStart).toBe(
      true,
    );
    const job = Job.of(1);
    const fx = job.outcome({ index: 0, status: 'PASSED' });
    expect(types(fx)).toEqual(['TASK_GRADED']);
    expect(job.task(0)).toMatchObject({ status: 'PASSED' });
  });
});

describe('job transitions at scale', () => {
  it('keeps the state the same size from the first task to the 20,000th, each graded once', () => {
    const n = 20_000;
    const job = Job.of(n, { concurrency: 8 });
    const sizes: number[] = [];
    let next = 0;
    // Finish tasks in the order they were dispatched, with an infrastructure retry every 97th.
    const inFlight = job.effects.dispatch.map((d) => d.index);
    while (inFlight.length > 0) {
      const index = inFlight.shift() as number;
      const t = job.task(index);
      const retry = index % 97 === 0 && t.attempts === 1;
      const fx = job.outcome(
        retry
          ? { index, attempt: 1, status: 'ERRORED', infrastructure: true, error: 'x' }
          : { index, attempt: t.attempts, status: index % 3 === 0 ? 'FAILED' : 'PASSED' },
        T0 + next++,
      );
      if (retry) inFlight.push(...job.retryDue(index, 2, T0 + next).dispatch.map((d) => d.index));
      inFlight.push(...fx.dispatch.map((d) => d.index));
      if (next % 1_000 === 0) sizes.push(JSON.stringify(job.state).length);
    }
    expect(job.state.phase).toBe('SUCCEEDED');
    expect(countTasks(job.state)).toMatchObject({
      total: n,
      done: n,
      passed: n - Math.ceil(n / 3),
      failed: Math.ceil(n / 3),
    });
    // Every task became final exactly once.
    expect(job.finals.size).toBe(n);
    expect([...job.finals.values()].every((c) => c === 1)).toBe(true);
    // The state never grew with the job: a few kB with 8 tasks in flight, at any point.
    expect(Math.max(...sizes)).toBeLessThan(6_000);
    expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThan(2_000);
  });

  it('bounds the tasks waiting on a retry to the concurrency', () => {
    const job = Job.of(100, { concurrency: 4, retries: { max: 3, backoffMs: 1_000 } });
    // Every dispatched task fails on infrastructure and waits its backoff.
    let dispatched = job.effects.dispatch;
    for (let round = 0; round < 10 && dispatched.length > 0; round++) {
      const next: typeof dispatched = [];
      for (const d of dispatched) {
        next.push(
          ...job.outcome({ index: d.index, status: 'ERRORED', infrastructure: true }).dispatch,
        );
      }
      dispatched = next;
    }
    expect(job.state.active.length).toBe(8);
    expect(job.state.active.every((t) => t.status === 'BACKOFF')).toBe(true);
    expect(job.state.cursor).toBe(8);
  });

  it('cancels a large job with one entry per task it took, and a summary for the rest', () => {
    const n = 5_000;
    const job = Job.of(n, { concurrency: 2 });
    const fx = job.cancel('user');
    const finished = fx.events.filter((e) => e.type === 'TASK_FINISHED');
    expect(finished).toHaveLength(MAX_STOP_EVENTS);
    const summary = fx.events.find((e) => e.type === 'LOG');
    expect(summary?.payload).toMatchObject({ tasks: n - 2 - MAX_STOP_EVENTS });
    // The untaken tasks have no record each, and still read as cancelled.
    expect(fx.finals).toEqual([]);
    expect(job.task(n - 1)).toMatchObject({ status: 'CANCELLED', error: 'cancelled: user' });
    expect(countTasks(job.state)).toMatchObject({ cancelled: n - 2, running: 2 });
    job.outcome({ index: 0, status: 'CANCELLED' });
    job.outcome({ index: 1, status: 'PASSED' });
    expect(job.state.phase).toBe('CANCELLED');
    expect(countTasks(job.state)).toMatchObject({ cancelled: n - 1, passed: 1, pending: 0 });
  });

  it('resumes the stopped part of a work list, and only the tasks without a grade', () => {
    const job = Job.of(10, { concurrency: 2, budget: { usd: 1 } });
    job.outcome({ index: 0, status: 'PASSED', costUsd: 0.1 });
    job.outcome({ index: 1, status: 'FAILED', costUsd: 0.1 });
    // Task 2 spends the rest: tasks 4-9 were never taken and end ERRORED at once.
    job.outcome({ index: 2, status: 'PASSED', costUsd: 0.9 });
    job.outcome({ index: 3, status: 'ERRORED', infrastructure: false, error: 'bad' });
    expect(job.state.phase).toBe('FAILED');
    expect(job.statuses().slice(3)).toEqual(Array(7).fill('ERRORED'));
    const fx = job.resume(spec({ concurrency: 2 }), T0 + 1);
    expect(job.state.workLength).toBe(7);
    expect(fx.dispatch).toEqual([
      { index: 3, attempt: 2 },
      { index: 4, attempt: 1 },
    ]);
    expect(job.statuses()).toEqual([
      'PASSED',
      'FAILED',
      'PASSED',
      'QUEUED',
      'QUEUED',
      ...Array(5).fill('PENDING'),
    ]);
    for (let i = 3; i < 10; i++) {
      job.outcome({ index: i, attempt: i === 3 ? 2 : 1, status: 'PASSED' }, T0 + 2 + i);
    }
    expect(job.state.phase).toBe('SUCCEEDED');
    expect(countTasks(job.state)).toMatchObject({ passed: 9, failed: 1, errored: 0, pending: 0 });
  });
});
