import {
  attemptResourceId,
  BudgetLedger,
  Coordinator,
  DriverRegistry,
  type JobDriver,
  type JobEventRecord,
  type JobManager,
  type JobSpec,
  JobStore,
  MAX_TASKS_PER_JOB,
} from '@troupe/coordinator';
import { UntypedActorRef } from '@troupe/actors';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import {
  delay,
  eventsSubject,
  Header,
  inboxSubjectFilter,
  invalidArgument,
  kvBucketName,
  TroupeError,
} from '@troupe/proto';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';

// The job machinery end to end in one process, with a driver whose tasks behave as told: pass,
// fail, fail on infrastructure N times, or hang until aborted.

interface ScriptTask {
  id: string;
  do: 'pass' | 'fail' | 'hang' | 'costly' | 'huge' | 'slow' | 'stuck-cleanup' | `flaky:${number}`;
}

const calls = { run: new Map<string, number>(), cleanup: new Map<string, number>() };
/** Each run's `ctx.resourceId` and `ctx.earlierResourceIds`, by job/task. */
const resources = new Map<string, { resourceId: string; earlier: string[] }[]>();
const budgetScopes: (string | undefined)[] = [];
/** What a `stuck-cleanup` task's cleanup saw: how its signal ended, and after how long. */
const stuckCleanups = new Map<string, { reason: string; afterMs: number }>();
const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);

const scripted: JobDriver<ScriptTask, { ok: boolean; partial?: boolean }> = {
  name: 'scripted',
  description: 'tasks that pass, fail, hang or fail on infrastructure, as scripted',
  validate(spec: JobSpec) {
    if (!Array.isArray(spec.tasks) && typeof spec.config['generate'] !== 'number') {
      throw invalidArgument('spec.tasks', 'must be a list');
    }
  },
  // A `huge` task's input is larger than one NATS message (2 MiB of padding). `config.generate`
  // plans that many passing tasks instead of the list.
  plan: (spec) =>
    typeof spec.config['generate'] === 'number'
      ? Array.from({ length: spec.config['generate'] }, (_, i) => ({
          id: `g${i}`,
          input: { id: `g${i}`, do: 'pass' },
        }))
      : (spec.tasks as ScriptTask[]).map((t) => ({
          id: t.id,
          input: t.do === 'huge' ? { ...t, pad: 'x'.repeat(2 * 1024 * 1024) } : t,
        })),
  async runTask(ctx, task) {
    const key = `${ctx.jobId}/${task.id}`;
    bump(calls.run, key);
    resources.set(key, [
      ...(resources.get(key) ?? []),
      { resourceId: ctx.resourceId, earlier: [...ctx.earlierResourceIds] },
    ]);
    if (task.do.startsWith('flaky:')) {
      const failures = Number(task.do.slice('flaky:'.length));
      if (ctx.attempt <= failures) throw new TroupeError('UNAVAILABLE', `flake ${ctx.attempt}`);
      return { ok: true };
    }
    if (task.do.startsWith('fenced:')) {
      // What an ask gets when the sandbox actor it called is fenced mid-turn (its host was
      // declared dead, the actor moved): CANCELLED, though nobody cancelled this task.
      const failures = Number(task.do.slice('fenced:'.length));
      if (ctx.attempt <= failures) {
        throw new TroupeError('CANCELLED', `start sandbox sbx-${task.id}: cancelled`);
      }
      return { ok: true };
    }
    if (task.do === 'hang') {
      await new Promise<void>((resolve) => {
        if (ctx.signal.aborted) resolve();
        ctx.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      return { ok: false, partial: true };
    }
    ctx.progress({ message: `running ${task.id}` });
    if (task.do === 'slow') await delay(2 * START_DELAY_MS, ctx.signal);
    if (task.do === 'costly') budgetScopes.push(ctx.budgetScope);
    return {
      ok:
        task.do === 'pass' ||
        task.do === 'costly' ||
        task.do === 'slow' ||
        task.do === 'stuck-cleanup',
    };
  },
  async grade(_ctx, task, run) {
    return {
      passed: run?.ok === true,
      details: { partial: run?.partial === true },
      ...(task.do === 'costly' ? { costUsd: 0.6, promptTokens: 100, completionTokens: 20 } : {}),
    };
  },
  async cleanup(ctx, task) {
    bump(calls.cleanup, `${ctx.jobId}/${task.id}`);
    if (task.do === 'stuck-cleanup') {
      // Waits for its signal, which only the cleanup timeout aborts.
      const started = Date.now();
      await new Promise<void>((resolve) =>
        ctx.signal.addEventListener('abort', () => resolve(), { once: true }),
      );
      stuckCleanups.set(`${ctx.jobId}/${task.id}`, {
        reason: (ctx.signal.reason as Error).name,
        afterMs: Date.now() - started,
      });
    }
  },
  collect: (_spec, tasks) => ({ graded: tasks.filter((t) => t.score !== undefined).length }),
};

/** The task actors' cleanup timeout in this file. */
const CLEANUP_TIMEOUT_MS = 1_500;
/** The task actors' start-report delay in this file. */
const START_DELAY_MS = 1_000;
const cluster = randomClusterName();
let server: NatsServerHandle;
let coordinator: Coordinator;
let jobs: JobManager;

beforeAll(async () => {
  server = await startNatsServer();
  coordinator = await Coordinator.start(
    {
      cluster,
      nats: { servers: server.url },
      heartbeatMs: 200,
      metrics: { port: null },
      shutdownGraceMs: 500,
    },
    {
      drivers: new DriverRegistry()
        .register(scripted)
        .register({ ...scripted, name: 'scripted-payloads', storesPayloads: true }),
      // Quick tasks end well within the start-report delay even on a loaded machine.
      jobs: {
        cancelGraceMs: 5_000,
        taskActor: { startReportDelayMs: START_DELAY_MS, cleanupTimeoutMs: CLEANUP_TIMEOUT_MS },
      },
    },
  );
  jobs = coordinator.jobs!;
});
afterAll(async () => {
  await coordinator?.stop();
  await server?.stop();
});

async function collect(
  jobId: string,
  fromSequence = 1,
  timeoutMs = 60_000,
): Promise<JobEventRecord[]> {
  const out: JobEventRecord[] = [];
  const signal = AbortSignal.timeout(timeoutMs);
  for await (const e of await jobs.watch(jobId, { fromSequence, signal })) out.push(e);
  return out;
}

test('runs a job under its concurrency: retries infrastructure failures, never graded ones', async () => {
  const record = await jobs.submit({
    spec: {
      kind: 'scripted',
      concurrency: 2,
      retries: { max: 2, backoffMs: 50, maxBackoffMs: 100 },
      tasks: [
        { id: 'a', do: 'pass' },
        { id: 'b', do: 'fail' },
        { id: 'c', do: 'flaky:2' },
        { id: 'd', do: 'pass' },
      ],
    },
  });
  expect(record.state).toBe('QUEUED');
  const events = await collect(record.jobId);
  // One log, numbered 1..n without gaps, ending with JOB_FINISHED.
  expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
  expect(events[0]?.type).toBe('JOB_QUEUED');
  const last = events[events.length - 1]!;
  expect(last.type).toBe('JOB_FINISHED');
  expect(last.payload).toMatchObject({ state: 'SUCCEEDED' });
  // Never more than two tasks running at once.
  let running = 0;
  let peak = 0;
  for (const e of events) {
    if (e.type === 'TASK_QUEUED') peak = Math.max(peak, ++running);
    if (e.type === 'TASK_GRADED' || e.type === 'TASK_RETRY' || e.type === 'TASK_FINISHED')
      running--;
  }
  expect(peak).toBe(2);
  expect(events.filter((e) => e.type === 'TASK_RETRY').map((e) => e.taskId)).toEqual(['c', 'c']);
  expect(calls.run.get(`${record.jobId}/b`)).toBe(1); // the graded failure ran once
  expect(calls.run.get(`${record.jobId}/c`)).toBe(3);
  expect(calls.cleanup.get(`${record.jobId}/c`)).toBe(3); // cleanup after every attempt
  // Each attempt is told the resources of every execution before it, oldest first.
  const c = [1, 2, 3].map((attempt) => attemptResourceId(record.jobId, 2, attempt, 1));
  expect(resources.get(`${record.jobId}/c`)).toEqual([
    { resourceId: c[0], earlier: [] },
    { resourceId: c[1], earlier: [c[0]] },
    { resourceId: c[2], earlier: [c[0], c[1]] },
  ]);
  expect(resources.get(`${record.jobId}/a`)).toEqual([
    { resourceId: attemptResourceId(record.jobId, 0, 1, 1), earlier: [] },
  ]);
  expect(events.some((e) => e.type === 'LOG' && e.message === 'running a')).toBe(true);

  const results = await jobs.results(record.jobId);
  expect(results.state).toBe('SUCCEEDED');
  expect(results.tasks.map((t) => [t.taskId, t.status, t.attempts])).toEqual([
    ['a', 'TASK_PASSED', 1],
    ['b', 'TASK_FAILED', 1],
    ['c', 'TASK_PASSED', 3],
    ['d', 'TASK_PASSED', 1],
  ]);
  expect(results.aggregate).toMatchObject({ total: 4, passed: 3, failed: 1, pending: 0 });
  expect(results.aggregate.passRate).toBeCloseTo(0.75);
  expect(results.aggregate.extra).toEqual({ graded: 4 });
  const job = await jobs.get(record.jobId);
  expect(job.state).toBe('SUCCEEDED');
  expect(job.progress).toMatchObject({ total: 4, done: 4, passed: 3, failed: 1, running: 0 });

  // A late watcher from the middle gets exactly the rest.
  const tail = await collect(record.jobId, 5);
  expect(tail).toEqual(events.slice(4));
});

test('a short task reports its start with its outcome; a longer one posts it while it runs', async () => {
  // Every message posted to job actors, by type (a core subscription sees each post once).
  const posted = new Map<string, number>();
  const nc = await connect({ servers: server.url });
  nc.subscribe(`${inboxSubjectFilter(cluster).slice(0, -1)}job.*`, {
    callback: (_err, m) => {
      const key = `${m.subject.split('.').pop()}/${m.headers?.get(Header.MSG_TYPE) ?? '?'}`;
      posted.set(key, (posted.get(key) ?? 0) + 1);
    },
  });
  await nc.flush();
  try {
    const record = await jobs.submit({
      spec: {
        kind: 'scripted',
        concurrency: 3,
        tasks: [
          { id: 'quick1', do: 'pass' },
          { id: 'slow', do: 'slow' },
          { id: 'quick2', do: 'fail' },
        ],
      },
    });
    const events = await collect(record.jobId);
    for (const id of ['quick1', 'slow', 'quick2']) {
      const own = events.filter((e) => e.taskId === id && e.type.startsWith('TASK_'));
      expect([id, own.map((e) => e.type)]).toEqual([
        id,
        ['TASK_QUEUED', 'TASK_STARTED', 'TASK_GRADED'],
      ]);
      expect(own[1]?.payload).toMatchObject({ attempt: 1, execution: 1 });
    }
    // One `started` post, the slow task's (sent while it ran); one outcome per task.
    expect(posted.get(`${record.jobId}/started`)).toBe(1);
    expect(posted.get(`${record.jobId}/outcome`)).toBe(3);
    const slowStarted = events.find((e) => e.taskId === 'slow' && e.type === 'TASK_STARTED')!;
    const slowGraded = events.find((e) => e.taskId === 'slow' && e.type === 'TASK_GRADED')!;
    expect(slowGraded.timeUnixMs - slowStarted.timeUnixMs).toBeGreaterThanOrEqual(
      START_DELAY_MS / 2,
    );
    const results = await jobs.results(record.jobId);
    expect(results.tasks.map((t) => [t.taskId, t.status])).toEqual([
      ['quick1', 'TASK_PASSED'],
      ['slow', 'TASK_PASSED'],
      ['quick2', 'TASK_FAILED'],
    ]);
  } finally {
    await nc.close();
  }
});

test('a cancellation the task did not ask for is an infrastructure failure: retried', async () => {
  const record = await jobs.submit({
    spec: {
      kind: 'scripted',
      retries: { max: 2, backoffMs: 50, maxBackoffMs: 100 },
      tasks: [{ id: 'moved', do: 'fenced:1' }],
    },
  });
  const events = await collect(record.jobId);
  expect(events.filter((e) => e.type === 'TASK_RETRY').map((e) => e.taskId)).toEqual(['moved']);
  const results = await jobs.results(record.jobId);
  expect(results.tasks.map((t) => [t.taskId, t.status, t.attempts])).toEqual([
    ['moved', 'TASK_PASSED', 2],
  ]);
});

test('a task that hits its timeout is stopped and what exists is graded', async () => {
  const record = await jobs.submit({
    spec: { kind: 'scripted', taskTimeoutMs: 300, tasks: [{ id: 'slow', do: 'hang' }] },
  });
  const events = await collect(record.jobId);
  const graded = events.find((e) => e.type === 'TASK_GRADED');
  expect(graded?.payload).toMatchObject({ status: 'TIMED_OUT', score: 0 });
  const results = await jobs.results(record.jobId);
  expect(results.tasks[0]).toMatchObject({ status: 'TASK_TIMED_OUT', stopReason: 'timeout' });
  expect(results.tasks[0]?.details).toEqual({ partial: true });
  expect(results.state).toBe('SUCCEEDED');
});

test('a cleanup that does not end is stopped by its timeout, and the task is graded', async () => {
  const record = await jobs.submit({
    spec: { kind: 'scripted', tasks: [{ id: 'stuck', do: 'stuck-cleanup' }] },
  });
  const events = await collect(record.jobId);
  expect(events.find((e) => e.type === 'TASK_GRADED')?.payload).toMatchObject({
    status: 'PASSED',
  });
  const seen = stuckCleanups.get(`${record.jobId}/stuck`);
  expect(seen?.reason).toBe('TimeoutError');
  expect(seen?.afterMs).toBeGreaterThanOrEqual(CLEANUP_TIMEOUT_MS - 50);
});

test('cancel stops running tasks, runs their cleanup, and ends the job CANCELLED', async () => {
  const record = await jobs.submit({
    spec: {
      kind: 'scripted',
      concurrency: 2,
      tasks: [
        { id: 'h1', do: 'hang' },
        { id: 'h2', do: 'hang' },
        { id: 'h3', do: 'hang' },
      ],
    },
  });
  await waitFor(async () => (await jobs.get(record.jobId)).progress.running === 2, {
    timeoutMs: 20_000,
  });
  await waitFor(() => calls.run.get(`${record.jobId}/h2`) === 1, { timeoutMs: 20_000 });
  // The two running tasks share one watch of the job's events (one per task made every event
  // reach every running task): the server holds one subscription to the subject.
  const subsz = (await (await fetch(`${server.monitorUrl}/subsz?subs=1&limit=10000`)).json()) as {
    subscriptions_list?: { subject: string }[];
  };
  const subject = eventsSubject(cluster, record.jobId);
  expect(subsz.subscriptions_list?.filter((x) => x.subject === subject)).toHaveLength(1);
  const cancelled = await jobs.cancel(record.jobId, 'user');
  expect(cancelled.cancelRequested).toBe(true);
  const events = await collect(record.jobId);
  expect(events.at(-1)?.payload).toMatchObject({ state: 'CANCELLED', reason: 'user' });
  const results = await jobs.results(record.jobId);
  expect(results.tasks.map((t) => t.status)).toEqual([
    'TASK_CANCELLED',
    'TASK_CANCELLED',
    'TASK_CANCELLED',
  ]);
  expect(calls.run.get(`${record.jobId}/h3`)).toBeUndefined();
  expect(calls.cleanup.get(`${record.jobId}/h1`)).toBe(1);
  expect(calls.cleanup.get(`${record.jobId}/h2`)).toBe(1);
});

test('a task whose input cannot be delivered errors naming max_payload; the others run', async () => {
  const record = await jobs.submit({
    spec: {
      kind: 'scripted',
      concurrency: 2,
      retries: { max: 2, backoffMs: 50, maxBackoffMs: 100 },
      tasks: [
        { id: 'a', do: 'pass' },
        { id: 'big', do: 'huge' },
        { id: 'c', do: 'pass' },
      ],
    },
  });
  const events = await collect(record.jobId);
  expect(events[events.length - 1]?.payload).toMatchObject({ state: 'FAILED' });
  const results = await jobs.results(record.jobId);
  const byId = new Map(results.tasks.map((t) => [t.taskId, t]));
  expect(byId.get('a')?.status).toBe('TASK_PASSED');
  expect(byId.get('c')?.status).toBe('TASK_PASSED');
  // Not retried: it can never fit.
  expect(events.filter((e) => e.type === 'TASK_QUEUED' && e.taskId === 'big')).toHaveLength(1);
  const big = results.tasks.find((t) => t.taskId === 'big');
  expect(big?.status ?? 'TASK_ERRORED').toBe('TASK_ERRORED');
  const finished = events.find((e) => e.type === 'TASK_FINISHED' && e.taskId === 'big');
  expect(finished?.message).toMatch(/more than the NATS server's max_payload \(1048576 bytes\)/);
  expect(calls.run.get(`${record.jobId}/big`)).toBeUndefined();
});

test('invalid specs are refused naming the field; an idempotency key returns the first job', async () => {
  await expect(jobs.submit({ spec: 'kind: nope\ntasks: []' })).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
    message: expect.stringContaining('unknown job kind (known: scripted, scripted-payloads)'),
  });
  const spec = { kind: 'scripted', tasks: [{ id: 'x', do: 'pass' }] };
  const a = await jobs.submit({ spec, idempotencyKey: 'k-1' });
  const b = await jobs.submit({ spec, idempotencyKey: 'k-1' });
  expect(b.jobId).toBe(a.jobId);
  await collect(a.jobId);
  const listed = await jobs.list({ states: ['SUCCEEDED'] });
  expect(listed.jobs.map((j) => j.jobId)).toContain(a.jobId);
  const page = await jobs.list({ pageSize: 1 });
  expect(page.jobs).toHaveLength(1);
  const next = await jobs.list({ pageSize: 1, pageToken: page.nextPageToken });
  expect(next.jobs[0]?.jobId).not.toBe(page.jobs[0]?.jobId);
});

// Chaos seed 8016: the first submission created the job's record and then failed to post its
// `start` (the inbox stream without a leader after a NATS server's loss); the client retried
// with the same idempotency key, was answered with the record, and the job never ran.
test('a submission retried after its start post failed runs the job', async () => {
  const spec = { kind: 'scripted', tasks: [{ id: 'x', do: 'pass' }] };
  const realPost = UntypedActorRef.prototype.post;
  let refused = 0;
  jest.spyOn(UntypedActorRef.prototype, 'post').mockImplementation(async function (
    this: UntypedActorRef,
    ...args: Parameters<UntypedActorRef['post']>
  ) {
    if (args[0] === 'start' && refused === 0) {
      refused++;
      throw new TroupeError('UNAVAILABLE', 'publish to the inbox: no stream answered', {
        retryable: true,
      });
    }
    return realPost.apply(this, args);
  });
  try {
    await expect(jobs.submit({ spec, idempotencyKey: 'k-start-lost' })).rejects.toMatchObject({
      code: 'UNAVAILABLE',
    });
    const retried = await jobs.submit({ spec, idempotencyKey: 'k-start-lost' });
    expect(refused).toBe(1);
    const events = await collect(retried.jobId);
    expect(events.at(-1)?.payload).toMatchObject({ state: 'SUCCEEDED' });
    expect(calls.run.get(`${retried.jobId}/x`)).toBe(1);
    // A third submission finds it running or done: nothing starts twice.
    const again = await jobs.submit({ spec, idempotencyKey: 'k-start-lost' });
    expect(again.jobId).toBe(retried.jobId);
  } finally {
    jest.restoreAllMocks();
  }
});

test('a plan larger than MAX_TASKS_PER_JOB fails the job with a reason naming the limit', async () => {
  const record = await jobs.submit({
    spec: { kind: 'scripted', tasks: [], config: { generate: MAX_TASKS_PER_JOB + 1 } },
  });
  const events = await collect(record.jobId);
  expect(events.at(-1)?.payload).toMatchObject({ state: 'FAILED' });
  const job = await jobs.get(record.jobId);
  expect(job.reason).toContain(`a job holds at most ${MAX_TASKS_PER_JOB} tasks`);
  expect(job.reason).toContain(String(MAX_TASKS_PER_JOB + 1));
  expect([...calls.run.keys()].some((k) => k.startsWith(`${record.jobId}/`))).toBe(false);
});

test('a job of more tasks than a state record held runs each once; results page in plan order', async () => {
  const n = 2_100;
  // Every write of job records, counted from before the submission.
  const watcher = await connect({ servers: server.url });
  const recordWrites = new Map<string, number>();
  const watch = await (
    await new Kvm(watcher).open(kvBucketName(cluster, 'jobs'))
  ).watch({ key: 'job.*', include: 'updates' });
  void (async () => {
    for await (const e of watch) recordWrites.set(e.key, (recordWrites.get(e.key) ?? 0) + 1);
  })();
  const record = await jobs.submit({
    spec: { kind: 'scripted', tasks: [], concurrency: 64, config: { generate: n } },
  });
  // Page through the results while tasks complete: every page is a slice of the plan, in order,
  // whatever finished between two calls.
  const paged: string[] = [];
  let token = '';
  let pages = 0;
  await waitFor(
    async () => {
      const page = await jobs.results(record.jobId, { pageSize: 500, pageToken: token });
      if (page.tasks.length === 0) return false; // not planned yet
      paged.push(...page.tasks.map((t) => t.taskId));
      pages++;
      token = page.nextPageToken;
      return token === '';
    },
    { timeoutMs: 60_000, message: 'every results page read' },
  );
  expect(pages).toBe(Math.ceil(n / 500));
  expect(paged).toEqual(Array.from({ length: n }, (_, i) => `g${i}`));
  const events = await collect(record.jobId, 1, 200_000);
  expect(events.at(-1)?.payload).toMatchObject({
    state: 'SUCCEEDED',
    aggregate: { total: n, passed: n, pending: 0 },
  });
  const graded = events.filter((e) => e.type === 'TASK_GRADED').map((e) => e.taskId);
  expect(graded).toHaveLength(n);
  expect(new Set(graded).size).toBe(n);
  for (let i = 0; i < n; i++) expect(calls.run.get(`${record.jobId}/g${i}`)).toBe(1);
  // Outcomes waiting in the job actor's inbox are applied in one turn, their effects carried out
  // together: far fewer job-record writes than outcomes (one per outcome and start before).
  await waitFor(() => (recordWrites.get(`job.${record.jobId}`) ?? 0) > 0, {
    timeoutMs: 10_000,
    message: 'the job record writes watched',
  });
  watch.stop();
  await watcher.close();
  const writes = recordWrites.get(`job.${record.jobId}`) ?? 0;
  expect(writes).toBeGreaterThan(1);
  expect(writes).toBeLessThan(n / 2);
  // Start deadlines are one sweep per job, not a reminder per attempt (each stored, and armed on
  // the leader, until it fired): 2,100 quick tasks armed it once, or a few times at most.
  const nc = await connect({ servers: server.url });
  try {
    const reminders = await new Kvm(nc).open(kvBucketName(cluster, 'reminders'));
    const perAttempt = await Promise.all(
      [0, 1, 777, n - 1].map((i) => reminders.get(`start-${record.jobId}-${i}-1`)),
    );
    expect(perAttempt).toEqual([null, null, null, null]);
    const sweeps: string[] = [];
    for await (const k of await reminders.keys()) {
      if (k.startsWith(`start-sweep-${record.jobId}-`)) sweeps.push(k);
    }
    expect(sweeps.length).toBeGreaterThanOrEqual(1);
    expect(sweeps.length).toBeLessThanOrEqual(3);
  } finally {
    await nc.close();
  }
  const all = await jobs.results(record.jobId, { pageSize: 5_000 });
  expect(all.nextPageToken).toBe('');
  expect(all.tasks.every((t) => t.status === 'TASK_PASSED' && t.attempts === 1)).toBe(true);
  await expect(jobs.results(record.jobId, { pageToken: 'not-a-token' })).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
  });
  await expect(jobs.results(record.jobId, { pageSize: 5_001 })).rejects.toThrow(
    /page_size`: must be between 0 and 5000/,
  );
  // A page anywhere in the plan, by offset (what the dashboard's visible rows read).
  const window = await jobs.results(record.jobId, { offset: 2_050, pageSize: 100 });
  expect(window.tasks.map((t) => t.taskId)).toEqual(
    Array.from({ length: 50 }, (_, k) => `g${2_050 + k}`),
  );
  expect(window.nextPageToken).toBe('');
  expect(window.aggregate.total).toBe(n);
  const middle = await jobs.results(record.jobId, { offset: 777, pageSize: 2 });
  expect(middle.tasks.map((t) => t.taskId)).toEqual(['g777', 'g778']);
  expect(middle.nextPageToken).not.toBe('');
  expect((await jobs.results(record.jobId, { offset: n + 5 })).tasks).toEqual([]);
  await expect(jobs.results(record.jobId, { offset: -1 })).rejects.toThrow(
    /offset`: must be an integer >= 0/,
  );
  // A watch of the last events only (the dashboard's first load of a long job).
  const tail: number[] = [];
  for await (const e of await jobs.watch(record.jobId, { tail: 3 })) tail.push(e.sequence);
  const last = events.at(-1)!.sequence;
  expect(tail).toEqual([last - 2, last - 1, last]);
  await expect(
    jobs.results(record.jobId, { offset: 3, pageToken: middle.nextPageToken }),
  ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/offset/) });
}, 240_000);

test('resubmitting a failed job with resumeJobId re-runs only its errored tasks', async () => {
  const spec = {
    kind: 'scripted',
    retries: { max: 0 },
    tasks: [
      { id: 'fine', do: 'pass' },
      { id: 'flake', do: 'flaky:1' },
    ],
  };
  const first = await jobs.submit({ spec });
  const events = await collect(first.jobId);
  expect(events.at(-1)?.payload).toMatchObject({ state: 'FAILED' });
  expect((await jobs.get(first.jobId)).reason).toMatch(/^1 of 2 tasks errored/);

  const resumed = await jobs.submit({ spec, resumeJobId: first.jobId });
  expect(resumed.jobId).toBe(first.jobId);
  await waitFor(async () => (await jobs.get(first.jobId)).state === 'SUCCEEDED', {
    timeoutMs: 20_000,
  });
  const all = await collect(first.jobId);
  expect(all.filter((e) => e.type === 'JOB_RESUMED')).toHaveLength(1);
  expect(all.filter((e) => e.type === 'JOB_FINISHED').map((e) => e.payload?.['state'])).toEqual([
    'FAILED',
    'SUCCEEDED',
  ]);
  expect(calls.run.get(`${first.jobId}/fine`)).toBe(1);
  expect(calls.run.get(`${first.jobId}/flake`)).toBe(2);
  const results = await jobs.results(first.jobId);
  expect(results.tasks.map((t) => [t.taskId, t.status, t.attempts])).toEqual([
    ['fine', 'TASK_PASSED', 1],
    ['flake', 'TASK_PASSED', 2],
  ]);
});

test('a job budget: the scope is opened for the tasks, and a spent budget fails the job', async () => {
  const record = await jobs.submit({
    spec: {
      kind: 'scripted',
      concurrency: 1,
      budget: { usd: 1 },
      tasks: [
        { id: 'c1', do: 'costly' },
        { id: 'c2', do: 'costly' },
        { id: 'c3', do: 'costly' },
      ],
    },
  });
  const events = await collect(record.jobId);
  expect(budgetScopes.slice(-2)).toEqual([`job:${record.jobId}`, `job:${record.jobId}`]);
  const budget = events.filter((e) => e.type === 'BUDGET').map((e) => e.payload?.['spentUsd']);
  expect(budget).toEqual([0.6, 1.2]);
  expect(events.at(-1)?.payload).toMatchObject({
    state: 'FAILED',
    reason: expect.stringMatching(/^budget exhausted: spent \$1\.2000 of \$1/),
  });
  const results = await jobs.results(record.jobId);
  expect(results.tasks.map((t) => t.status)).toEqual([
    'TASK_PASSED',
    'TASK_PASSED',
    'TASK_ERRORED',
  ]);
  expect(results.aggregate).toMatchObject({
    costUsd: 1.2,
    promptTokens: 200,
    completionTokens: 40,
  });
  expect(calls.run.get(`${record.jobId}/c3`)).toBeUndefined();
});

test('only a driver that stores payloads has them deleted at the job end (a store listing)', async () => {
  const deletePrefix = jest.spyOn(JobStore.prototype, 'deletePrefix');
  const removeScope = jest.spyOn(BudgetLedger.prototype, 'removeScope');
  try {
    const ended = async (kind: string): Promise<string> => {
      const { jobId } = await jobs.submit({
        spec: { kind, budget: { usd: 5 }, tasks: [{ id: 'p1', do: 'pass' }] },
      });
      await collect(jobId);
      // The job's end removes its budget scope after its payloads (job-actor.ts): once that
      // ran, the payload step is over.
      await waitFor(() => removeScope.mock.calls.some(([s]) => s === `job:${jobId}`), {
        timeoutMs: 10_000,
        message: `job ${jobId} removed its budget scope`,
      });
      return jobId;
    };
    // Deleting them lists every object of the cluster: one listing per job made each job's end
    // cost as much as all the artifacts kept so far (the soak's NATS memory grew with it).
    await ended('scripted');
    expect(deletePrefix).not.toHaveBeenCalled();
    const withPayloads = await ended('scripted-payloads');
    expect(deletePrefix.mock.calls).toEqual([[`jobs/${withPayloads}/payload/`]]);
  } finally {
    deletePrefix.mockRestore();
    removeScope.mockRestore();
  }
});

// Last in this file: it takes the NATS server away.
test('GetResults reads again through a NATS server restart instead of failing', async () => {
  const record = await jobs.submit({
    spec: { kind: 'scripted', tasks: [{ id: 'r1', do: 'pass' }] },
  });
  await collect(record.jobId);
  // Chaos seeds 4002 and 4035: GetResults failed "timeout" while a server restarted.
  await server.kill();
  let settled = false;
  const reading = jobs.results(record.jobId).finally(() => (settled = true));
  reading.catch(() => undefined); // asserted below
  try {
    // An outage longer than a JetStream request's timeout (5 s): the first reads fail meanwhile.
    await delay(6_000);
    expect(settled).toBe(false);
  } finally {
    await server.restart(); // the coordinator's teardown needs its server
  }
  const results = await reading;
  expect(results.tasks.map((t) => [t.taskId, t.status])).toEqual([['r1', 'TASK_PASSED']]);
});
