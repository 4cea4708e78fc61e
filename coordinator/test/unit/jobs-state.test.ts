import {
  countTasks,
  emptyJobState,
  type JobEffects,
  type JobSpec,
  JobSpecSchema,
  type JobState,
  JobTransitions,
  type TaskOutcome,
  TaskOutcomeSchema,
} from '@troupe/coordinator';

const T0 = 1_700_000_000_000;

function spec(over: Record<string, unknown> = {}): JobSpec {
  return JobSpecSchema.parse({ kind: 'shell-tasks', tasks: [], concurrency: 2, ...over });
}

function started(n: number, over: Record<string, unknown> = {}) {
  const ids = Array.from({ length: n }, (_, i) => `t${i}`);
  return JobTransitions.start(emptyJobState('j1'), {
    spec: spec(over),
    createdUnixMs: T0,
    taskIds: ids,
    now: T0,
  });
}

function outcome(o: Partial<TaskOutcome> & Pick<TaskOutcome, 'index' | 'status'>): TaskOutcome {
  return TaskOutcomeSchema.parse({ attempt: 1, ...o });
}

function types(fx: JobEffects): string[] {
  return fx.events.map((e) => e.type);
}

describe('job transitions', () => {
  it('queues, starts and dispatches no more tasks than the concurrency', () => {
    const { state, effects } = started(5);
    expect(state.phase).toBe('RUNNING');
    expect(effects.dispatch).toEqual([
      { index: 0, attempt: 1 },
      { index: 1, attempt: 1 },
    ]);
    expect(types(effects)).toEqual(['JOB_QUEUED', 'JOB_STARTED', 'TASK_QUEUED', 'TASK_QUEUED']);
    expect(countTasks(state.tasks)).toMatchObject({ total: 5, running: 2, pending: 5, done: 0 });
  });

  it('times out at its start deadline an attempt whose task actor never started, only that', () => {
    const { state } = started(3, { taskTimeoutMs: 20_000 });
    const running = JobTransitions.started(
      state,
      { index: 1, attempt: 1, hostId: 'h', executions: 1 },
      T0,
    ).state;
    // Task 0 never started: it ends TIMED_OUT, its slot goes to task 2.
    const late = JobTransitions.startDeadline(
      running,
      { index: 0, attempt: 1, timeoutMs: 20_000 },
      T0 + 20_000,
    );
    expect(late.state.tasks[0]).toMatchObject({ status: 'TIMED_OUT', attempts: 1 });
    expect(late.state.tasks[0]!.error).toMatch(/did not start within taskTimeoutMs \(20000 ms\)/);
    expect(late.effects.dispatch).toEqual([{ index: 2, attempt: 1 }]);
    // Task 1 started: its own actor enforces the timeout. A stale attempt is ignored too.
    const started1 = JobTransitions.startDeadline(
      late.state,
      { index: 1, attempt: 1, timeoutMs: 20_000 },
      T0 + 20_000,
    );
    expect(started1.state).toBe(late.state);
    const stale = JobTransitions.startDeadline(
      late.state,
      { index: 2, attempt: 2, timeoutMs: 20_000 },
      T0 + 20_000,
    );
    expect(stale.state).toBe(late.state);
  });

  it('finishes an empty plan at once, and a failed plan as FAILED', () => {
    const empty = started(0);
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
    let { state } = started(3);
    let r = JobTransitions.outcome(state, outcome({ index: 0, status: 'PASSED', score: 1 }), T0);
    expect(r.effects.dispatch).toEqual([{ index: 2, attempt: 1 }]);
    expect(types(r.effects)).toEqual(['TASK_GRADED', 'TASK_QUEUED']);
    state = r.state;
    r = JobTransitions.outcome(state, outcome({ index: 1, status: 'FAILED', score: 0 }), T0 + 5);
    state = r.state;
    expect(state.phase).toBe('RUNNING');
    r = JobTransitions.outcome(state, outcome({ index: 2, status: 'TIMED_OUT', score: 0 }), T0 + 9);
    // Graded failures and timeouts are results: the job still succeeded.
    expect(r.state.phase).toBe('SUCCEEDED');
    expect(r.effects.finished).toBe(true);
    expect(countTasks(r.state.tasks)).toMatchObject({ passed: 1, failed: 1, timedOut: 1 });
  });

  it('retries infrastructure failures with doubling backoff, never graded failures', () => {
    let { state } = started(2, { retries: { max: 2, backoffMs: 100, maxBackoffMs: 150 } });
    let r = JobTransitions.outcome(
      state,
      outcome({ index: 0, status: 'ERRORED', infrastructure: true, error: 'docker down' }),
      T0,
    );
    expect(r.state.tasks[0]?.status).toBe('BACKOFF');
    expect(r.effects.retries).toEqual([{ index: 0, attempt: 2, atMs: T0 + 100 }]);
    expect(types(r.effects)).toEqual(['TASK_RETRY']);
    // The slot of the backing-off task is free for others (none pending here).
    expect(r.effects.dispatch).toEqual([]);
    state = r.state;
    r = JobTransitions.retryDue(state, { index: 0, attempt: 2 }, T0 + 100);
    expect(r.effects.dispatch).toEqual([{ index: 0, attempt: 2 }]);
    state = r.state;
    r = JobTransitions.outcome(
      state,
      outcome({ index: 0, attempt: 2, status: 'ERRORED', infrastructure: true, error: 'again' }),
      T0 + 200,
    );
    expect(r.effects.retries).toEqual([{ index: 0, attempt: 3, atMs: T0 + 350 }]);
    state = JobTransitions.retryDue(r.state, { index: 0, attempt: 3 }, T0 + 350).state;
    r = JobTransitions.outcome(
      state,
      outcome({ index: 0, attempt: 3, status: 'ERRORED', infrastructure: true, error: 'still' }),
      T0 + 400,
    );
    // Out of retries: errored for good.
    expect(r.state.tasks[0]?.status).toBe('ERRORED');
    expect(r.effects.retries).toEqual([]);
    // A graded failure of the other task is never retried.
    r = JobTransitions.outcome(r.state, outcome({ index: 1, status: 'FAILED' }), T0 + 500);
    expect(r.effects.retries).toEqual([]);
    expect(r.state.phase).toBe('FAILED');
    expect(r.state.reason).toMatch(/^1 of 2 tasks errored \(first: t0: still/);
  });

  it('keeps the last failed attempt’s error after a graded retry', () => {
    let { state } = started(1, { retries: { max: 1, backoffMs: 100 } });
    let r = JobTransitions.outcome(
      state,
      outcome({ index: 0, status: 'ERRORED', infrastructure: true, error: 'TIMEOUT: no window' }),
      T0,
    );
    expect(r.state.tasks[0]?.error).toBe('TIMEOUT: no window');
    state = JobTransitions.retryDue(r.state, { index: 0, attempt: 2 }, T0 + 100).state;
    r = JobTransitions.outcome(
      state,
      outcome({ index: 0, attempt: 2, status: 'FAILED' }),
      T0 + 200,
    );
    expect(r.state.tasks[0]?.status).toBe('FAILED');
    expect(r.state.tasks[0]?.error).toBe('TIMEOUT: no window');
    const retry = r.state;
    expect(types(r.effects)).toContain('TASK_GRADED');
    expect(retry.phase).not.toBe('RUNNING');
  });

  it('does not retry non-infrastructure errors', () => {
    const { state } = started(1);
    const r = JobTransitions.outcome(
      state,
      outcome({ index: 0, status: 'ERRORED', infrastructure: false, error: 'bad task' }),
      T0,
    );
    expect(r.state.tasks[0]?.status).toBe('ERRORED');
    expect(r.state.phase).toBe('FAILED');
  });

  it('ignores stale and duplicate outcomes', () => {
    const { state } = started(1);
    const once = JobTransitions.outcome(state, outcome({ index: 0, status: 'PASSED' }), T0);
    const twice = JobTransitions.outcome(once.state, outcome({ index: 0, status: 'FAILED' }), T0);
    expect(twice.state).toBe(once.state);
    expect(twice.effects.events).toEqual([]);
    const stale = JobTransitions.outcome(
      state,
      outcome({ index: 0, attempt: 7, status: 'PASSED' }),
      T0,
    );
    expect(stale.state).toBe(state);
  });

  it('cancels: pending tasks at once, running ones when they report, then the job', () => {
    const { state } = started(4);
    const c = JobTransitions.cancel(state, { reason: 'user' }, T0 + 10);
    expect(types(c.effects)).toEqual(['JOB_CANCEL_REQUESTED', 'TASK_FINISHED', 'TASK_FINISHED']);
    expect(c.state.phase).toBe('RUNNING');
    expect(c.state.tasks.map((t) => t.status)).toEqual([
      'QUEUED',
      'QUEUED',
      'CANCELLED',
      'CANCELLED',
    ]);
    // No new dispatch after a cancel, even when a slot frees up.
    const a = JobTransitions.outcome(c.state, outcome({ index: 0, status: 'CANCELLED' }), T0 + 20);
    expect(a.effects.dispatch).toEqual([]);
    // An infrastructure failure during cancellation is not retried.
    const b = JobTransitions.outcome(
      a.state,
      outcome({ index: 1, status: 'ERRORED', infrastructure: true }),
      T0 + 30,
    );
    expect(b.effects.retries).toEqual([]);
    expect(b.state.phase).toBe('CANCELLED');
    expect(b.state.reason).toBe('user');
    // Cancelling a finished job changes nothing.
    expect(JobTransitions.cancel(b.state, { reason: 'again' }, T0).state).toBe(b.state);
  });

  it('writes off running tasks that do not stop within the grace period', () => {
    const { state } = started(2);
    const c = JobTransitions.cancel(state, { reason: 'user' }, T0);
    const d = JobTransitions.cancelDeadline(c.state, T0 + 30_000);
    expect(d.state.phase).toBe('CANCELLED');
    expect(d.state.tasks.every((t) => t.status === 'CANCELLED')).toBe(true);
  });

  it('stops at an exhausted budget and fails the job', () => {
    const { state } = started(3, { budget: { usd: 1 }, concurrency: 1 });
    const r = JobTransitions.outcome(
      state,
      outcome({ index: 0, status: 'PASSED', costUsd: 1.5 }),
      T0,
    );
    expect(types(r.effects)).toContain('BUDGET');
    expect(r.effects.dispatch).toEqual([]);
    expect(r.state.phase).toBe('FAILED');
    expect(r.state.reason).toMatch(/^budget exhausted: spent \$1\.5000 of \$1/);
    expect(r.state.tasks.map((t) => t.status)).toEqual(['PASSED', 'ERRORED', 'ERRORED']);
  });

  it('resumes a finished job, re-running only tasks without a grade', () => {
    const { state } = started(3, { concurrency: 3, retries: { max: 0 } });
    let s: JobState = state;
    s = JobTransitions.outcome(s, outcome({ index: 0, status: 'PASSED' }), T0).state;
    s = JobTransitions.outcome(
      s,
      outcome({ index: 1, status: 'ERRORED', infrastructure: true }),
      T0,
    ).state;
    s = JobTransitions.outcome(s, outcome({ index: 2, status: 'FAILED' }), T0).state;
    expect(s.phase).toBe('FAILED');
    const r = JobTransitions.resume(s, { spec: spec({ retries: { max: 0 } }) }, T0 + 1);
    expect(r.state.phase).toBe('RUNNING');
    expect(r.effects.dispatch).toEqual([{ index: 1, attempt: 2 }]);
    expect(types(r.effects)).toEqual(['JOB_RESUMED', 'TASK_QUEUED']);
  });

  it('records the host and re-executions of a started task', () => {
    const { state } = started(1);
    const r = JobTransitions.started(
      state,
      { index: 0, attempt: 1, hostId: 'h1', executions: 2 },
      T0,
    );
    expect(r.state.tasks[0]).toMatchObject({ status: 'RUNNING', hostId: 'h1', executions: 2 });
    expect(r.effects.events[0]?.payload).toEqual({ attempt: 1, host: 'h1', execution: 2 });
  });

  it('ignores the outcome of an execution older than the latest that started', () => {
    let { state } = started(1);
    state = JobTransitions.started(
      state,
      { index: 0, attempt: 1, hostId: 'h1', executions: 1 },
      T0,
    ).state;
    // The first execution's host went quiet; the task actor was moved and ran it again.
    state = JobTransitions.started(
      state,
      { index: 0, attempt: 1, hostId: 'h2', executions: 2 },
      T0,
    ).state;
    // The fenced first execution reports late, with the error of its replaced sandbox.
    let r = JobTransitions.outcome(
      state,
      outcome({
        index: 0,
        status: 'ERRORED',
        executions: 1,
        error: 'NOT_FOUND: sandbox sh-x-e1 was destroyed',
      }),
      T0 + 10,
    );
    expect(r.state).toBe(state);
    expect(r.effects.events).toEqual([]);
    r = JobTransitions.outcome(
      state,
      outcome({ index: 0, status: 'PASSED', executions: 2 }),
      T0 + 20,
    );
    expect(r.state.tasks[0]).toMatchObject({ status: 'PASSED', executions: 2 });
    expect(r.state.tasks[0]?.error).toBeUndefined();
  });
});
