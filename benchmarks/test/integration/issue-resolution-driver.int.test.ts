import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Coordinator, type JobEventRecord } from '@troupe/coordinator';
import { noopLogger } from '@troupe/proto';
import { waitFor } from '@troupe/testkit';
import {
  type TaskAgentRunContext,
  type TaskAgentRunner,
  createGoldAgentRunner,
  createIssueResolutionDriver,
  MODEL_AGENT_UNAVAILABLE,
  ResultStore,
} from '../../src/issue-resolution';
import { TestCluster } from '@troupe/test-cluster';

// The issue-resolution driver end to end: a real nats-server, a coordinator (job and task
// actors, this driver) and a node agent (Docker sandboxes and evaluators) in this process, the
// shipped bugfix-mini suite. Agents: the built-in gold and none, plus scripted runners registered
// through the driver's agent-runner seam (the model agent is not wired yet): one probes the
// sandbox for the grader, one works slowly so the task times out.

jest.setTimeout(900_000);

const SUITE = path.resolve(__dirname, '../../suites/bugfix-mini');

let tc: TestCluster;
let coordinator: Coordinator;
let work: string;

/** What the probe agent saw, by task id. */
const probes = new Map<string, { cmd: string; exitCode: number; stdout: string }[]>();

const probeRunner: TaskAgentRunner = {
  kind: 'probe',
  async run(ctx: TaskAgentRunContext) {
    const seen: { cmd: string; exitCode: number; stdout: string }[] = [];
    for (const cmd of [
      'cat /grader/run-tests.sh',
      'ls /grader',
      'ls -a /workspace',
      // Any file of the grader, anywhere the sandbox user can read.
      'grep -rl "Hidden grader" / --exclude-dir=proc --exclude-dir=sys 2>/dev/null',
      'test -e solution.patch',
    ]) {
      const r = await ctx.sandbox.exec(cmd, { signal: ctx.signal });
      seen.push({ cmd, exitCode: r.exitCode, stdout: r.stdout });
    }
    probes.set(ctx.taskId, seen);
    return {
      stopReason: 'finished',
      finalText: 'probed',
      steps: seen.length,
      usage: { promptTokens: 0, completionTokens: 0 },
      costUsd: 0,
    };
  },
};

/** Fixes py-lru-cache (gold patch) and nothing else, then keeps working until stopped. */
const slowRunner: TaskAgentRunner = {
  kind: 'slow',
  async run(ctx: TaskAgentRunContext) {
    if (ctx.taskId === 'py-lru-cache') {
      await createGoldAgentRunner().run({ ...ctx, solutionPatch: readPatch('py-lru-cache') });
    }
    await new Promise<never>((_resolve, reject) => {
      ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), {
        once: true,
      });
    });
    throw new Error('unreachable');
  },
};

function readPatch(taskId: string): string {
  return readFileSync(path.join(SUITE, taskId, 'solution.patch'), 'utf8');
}

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'issue-resolution-'));
  tc = await TestCluster.start({
    coordinator: {
      drivers: [createIssueResolutionDriver({ agentRunners: [probeRunner, slowRunner] })],
    },
    nodeAgent: { slots: { sandbox: 4, evaluator: 4 } },
  });
  coordinator = tc.coordinator;
});

afterAll(async () => {
  await tc?.stop();
  rmSync(work, { recursive: true, force: true });
});

async function readArtifact(jobId: string, artifactPath: string): Promise<string> {
  const reader = await coordinator.jobs!.artifact(jobId, artifactPath);
  const chunks: Uint8Array[] = [];
  for await (const c of reader.chunks) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

/** Submits a job, waits for it to finish, returns its results. */
async function runJob(spec: Record<string, unknown>, on: Coordinator = coordinator) {
  const jobs = on.jobs!;
  const record = await jobs.submit({ spec: { kind: 'issue-resolution', ...spec } });
  const events: JobEventRecord[] = [];
  for await (const e of await jobs.watch(record.jobId, { signal: AbortSignal.timeout(600_000) })) {
    events.push(e);
  }
  expect(events[events.length - 1]?.type).toBe('JOB_FINISHED');
  const results = await jobs.results(record.jobId);
  const byId = new Map(results.tasks.map((t) => [t.taskId, t]));
  return { jobId: record.jobId, results, byId, events };
}

const detailsOf = (t: { details?: unknown }) => (t.details ?? {}) as Record<string, unknown>;

test('gold passes every task, with the workspace, trajectory and grader logs collected', async () => {
  const { jobId, results } = await runJob({
    concurrency: 4,
    taskTimeoutMs: 300_000,
    config: { agent: { kind: 'gold' } },
    tasks: { suite: SUITE },
  });
  expect(results.tasks.length).toBeGreaterThanOrEqual(8);
  for (const t of results.tasks) {
    expect([t.taskId, t.status]).toEqual([t.taskId, 'TASK_PASSED']);
    const d = detailsOf(t);
    expect(d['grade']).toBe('passed');
    expect(d['agentKind']).toBe('gold');
    expect(d['gradeStatuses']).toEqual(['passed']);
    expect(t.stopReason).toBe('finished');
    const names = t.artifacts.map((a) => a.slice(a.lastIndexOf('/') + 1)).sort();
    expect(names).toEqual(['grader.tar', 'trajectory.jsonl', 'workspace.tar']);
  }
  const lru = results.tasks.find((t) => t.taskId === 'py-lru-cache')!;
  const links = detailsOf(lru)['links'] as Record<string, string>;
  expect(await readArtifact(jobId, links['graderStdout']!)).toMatch(/Ran 5 tests[\s\S]*OK/);
  const trajectory = await readArtifact(jobId, links['trajectory']!);
  expect(trajectory).toContain('"type":"apply"');
  expect(await readArtifact(jobId, links['workspace']!)).toContain('move_to_end');
  expect(results.aggregate.passed).toBe(results.tasks.length);
  await waitFor(async () => (await tc.containers()).length === 0, {
    timeoutMs: 60_000,
    message: 'no container of the cluster left',
  });
});

test('none fails every task', async () => {
  const { results } = await runJob({
    concurrency: 4,
    taskTimeoutMs: 300_000,
    config: { agent: { kind: 'none' } },
    tasks: { suite: SUITE },
  });
  for (const t of results.tasks) {
    expect([t.taskId, t.status]).toEqual([t.taskId, 'TASK_FAILED']);
    expect(detailsOf(t)['grade']).toBe('failed');
    expect(t.attempts).toBe(1); // a verdict is never retried
  }
  expect(results.aggregate.failed).toBe(results.tasks.length);
});

test('the agent cannot see the grader or the reference patch in its sandbox', async () => {
  const { byId } = await runJob({
    concurrency: 2,
    config: { agent: { kind: 'probe' } },
    tasks: { suite: SUITE, include: ['py-csv-quotes', 'sh-log-rotate'] },
  });
  for (const id of ['py-csv-quotes', 'sh-log-rotate']) {
    const seen = probes.get(id)!;
    const [cat, ls, listing, grep, patch] = seen;
    expect(cat!.exitCode).not.toBe(0);
    expect(cat!.stdout).toBe('');
    expect(ls!.exitCode).not.toBe(0);
    expect(listing!.exitCode).toBe(0);
    expect(listing!.stdout).not.toMatch(/grader|solution/);
    expect(grep!.stdout).toBe('');
    expect(patch!.exitCode).not.toBe(0);
    // The probe changed nothing: the hidden grader still fails the repository.
    expect(byId.get(id)!.status).toBe('TASK_FAILED');
  }
});

test('a task that runs out of time is graded on its partial work', async () => {
  const { byId } = await runJob({
    concurrency: 2,
    taskTimeoutMs: 25_000,
    retries: { max: 0 },
    config: { agent: { kind: 'slow' } },
    tasks: { suite: SUITE, include: ['py-lru-cache', 'py-csv-quotes'] },
  });
  const fixed = byId.get('py-lru-cache')!;
  expect(fixed.status).toBe('TASK_TIMED_OUT');
  expect(fixed.stopReason).toBe('timeout');
  expect(detailsOf(fixed)).toMatchObject({ grade: 'passed', timedOut: true });
  const untouched = byId.get('py-csv-quotes')!;
  expect(untouched.status).toBe('TASK_TIMED_OUT');
  expect(detailsOf(untouched)).toMatchObject({ grade: 'failed', timedOut: true });
});

test('a malformed task is reported with its id, field and rule; the rest of the job runs', async () => {
  const suite = path.join(work, 'malformed-suite');
  for (const id of ['py-lru-cache', 'js-paginate']) {
    cpSync(path.join(SUITE, id), path.join(suite, id), { recursive: true });
  }
  cpSync(path.join(SUITE, 'py-lru-cache'), path.join(suite, 'broken'), { recursive: true });
  const file = path.join(suite, 'broken', 'task.yaml');
  writeFileSync(
    file,
    readFileSync(file, 'utf8')
      .replace('id: py-lru-cache', 'id: broken')
      .replace('agentMs: 300000', 'agentMs: 5'),
  );
  // An undefined YAML alias, and an id that is not a task id: each is that task's error only.
  cpSync(path.join(SUITE, 'py-lru-cache'), path.join(suite, 'bad-alias'), { recursive: true });
  writeFileSync(
    path.join(suite, 'bad-alias', 'task.yaml'),
    readFileSync(file, 'utf8').replace('id: broken', 'id: *nowhere'),
  );
  cpSync(path.join(SUITE, 'py-lru-cache'), path.join(suite, 'bad-id'), { recursive: true });
  writeFileSync(
    path.join(suite, 'bad-id', 'task.yaml'),
    readFileSync(path.join(SUITE, 'py-lru-cache', 'task.yaml'), 'utf8').replace(
      'id: py-lru-cache',
      "id: 'not a valid id!'",
    ),
  );
  const { results, byId } = await runJob({
    concurrency: 3,
    config: { agent: { kind: 'gold' } },
    tasks: { suite },
  });
  const alias = byId.get('bad-alias')!;
  expect([alias.status, alias.attempts]).toEqual(['TASK_ERRORED', 1]);
  expect(alias.error).toMatch(/INVALID_ARGUMENT.*task bad-alias: task\.yaml.*alias.*nowhere/);
  const badId = byId.get('bad-id')!;
  expect([badId.status, badId.attempts]).toEqual(['TASK_ERRORED', 1]);
  expect(badId.error).toMatch(/task bad-id: task\.yaml id.*must match/);
  const broken = byId.get('broken')!;
  expect(broken.status).toBe('TASK_ERRORED');
  expect(broken.attempts).toBe(1); // bad input is not retried
  expect(broken.error).toMatch(/INVALID_ARGUMENT/);
  expect(broken.error).toMatch(/task broken: task\.yaml timeouts\.agentMs.*must be >= 1000/);
  expect(byId.get('py-lru-cache')!.status).toBe('TASK_PASSED');
  expect(byId.get('js-paginate')!.status).toBe('TASK_PASSED');
  expect((results.aggregate.extra as Record<string, unknown>)['invalidTasks']).toEqual([
    { taskId: 'bad-alias', field: 'task.yaml', rule: expect.stringMatching(/alias/) },
    { taskId: 'bad-id', field: 'id', rule: expect.stringMatching(/must match/) },
    { taskId: 'broken', field: 'timeouts.agentMs', rule: 'must be >= 1000' },
  ]);
});

test('re-running a job skips tasks with a complete result; an interrupted task runs again', async () => {
  const resultsDir = path.join(work, 'results');
  const spec = {
    concurrency: 2,
    config: { agent: { kind: 'gold' }, resultsDir },
    tasks: { suite: SUITE, include: ['py-version-compare', 'js-slugify'] },
  };
  const first = await runJob(spec);
  for (const t of first.results.tasks) expect(t.status).toBe('TASK_PASSED');
  expect(existsSync(path.join(resultsDir, 'js-slugify', 'result.json'))).toBe(true);

  const second = await runJob(spec);
  for (const t of second.results.tasks) {
    expect(t.status).toBe('TASK_PASSED');
    expect(detailsOf(t)['resumedFrom']).toBe(first.jobId);
    expect(t.artifacts).toEqual([]); // no sandbox, no grading
  }
  expect((second.results.aggregate.extra as Record<string, unknown>)['resumed']).toEqual([
    'js-slugify',
    'py-version-compare',
  ]);

  // js-slugify was interrupted before its result was complete: no record in the cluster's
  // results bucket, a torn file and no result.json in the folder.
  const store = await ResultStore.open({
    resultsDir,
    folder: resultsDir,
    nats: { connection: tc.nc, cluster: tc.cluster },
    log: noopLogger,
  });
  await store.remove('js-slugify');
  writeFileSync(path.join(resultsDir, 'js-slugify', 'result.json.123.tmp'), '{"vers');
  const third = await runJob(spec);
  expect(detailsOf(third.byId.get('py-version-compare')!)['resumedFrom']).toBe(first.jobId);
  const rerun = third.byId.get('js-slugify')!;
  expect(rerun.status).toBe('TASK_PASSED');
  expect(detailsOf(rerun)['resumedFrom']).toBeUndefined();
  expect(rerun.artifacts.length).toBe(3);

  // Another agent is another result: none does not reuse gold's.
  const none = await runJob({ ...spec, config: { agent: { kind: 'none' }, resultsDir } });
  for (const t of none.results.tasks) expect(t.status).toBe('TASK_FAILED');
});

test('grading is repeated on request with a pinned environment, and agreement is reported', async () => {
  const suite = path.join(work, 'env-suite');
  cpSync(path.join(SUITE, 'py-lru-cache'), path.join(suite, 'py-lru-cache'), { recursive: true });
  const grader = path.join(suite, 'py-lru-cache', 'grader', 'run-tests.sh');
  // The grader refuses to grade unless the environment is the pinned one.
  writeFileSync(
    grader,
    readFileSync(grader, 'utf8').replace(
      'set -u\n',
      'set -u\n' +
        'echo "env: TZ=$TZ LC_ALL=$LC_ALL PYTHONHASHSEED=$PYTHONHASHSEED GRADER_SEED=$GRADER_SEED"\n' +
        '[ "$TZ" = UTC ] && [ "$LC_ALL" = C.UTF-8 ] && [ "$PYTHONHASHSEED" = 0 ] && ' +
        '[ "$GRADER_SEED" = 7 ] || { echo "FAILED environment not pinned"; exit 1; }\n',
    ),
  );
  const { byId, results } = await runJob({
    config: { agent: { kind: 'gold' }, repeat: 3, seed: 7 },
    tasks: { suite },
  });
  const task = byId.get('py-lru-cache')!;
  expect(task.status).toBe('TASK_PASSED');
  expect(detailsOf(task)).toMatchObject({
    gradeStatuses: ['passed', 'passed', 'passed'],
    disagreement: false,
  });
  expect(detailsOf(task)['stdoutTail']).toBeDefined();
  expect((detailsOf(task)['durationsMs'] as { graders: number[] }).graders).toHaveLength(3);
  expect((results.aggregate.extra as Record<string, unknown>)['flaky']).toEqual([]);
});

test('model agents are refused at submit with a clear INVALID_ARGUMENT', async () => {
  await expect(
    coordinator.jobs!.submit({
      spec: {
        kind: 'issue-resolution',
        agent: { model: 'gpt-4o-mini' },
        config: { agent: { kind: 'model' } },
        tasks: { suite: SUITE },
      },
    }),
  ).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
    message: expect.stringContaining(MODEL_AGENT_UNAVAILABLE),
  });
});

test('a re-run on another coordinator host skips what the first host finished', async () => {
  // Two coordinator hosts of one cluster, each with its own working directory: the spec's
  // relative resultsDir is a different folder on each, and the second has none of the first's
  // files. What carries over is the cluster's results bucket.
  const hostA = path.join(work, 'host-a');
  const hostB = path.join(work, 'host-b');
  const spec = {
    concurrency: 2,
    config: { agent: { kind: 'gold' }, resultsDir: 'results/cross-host' },
    tasks: { suite: SUITE, include: ['py-version-compare', 'js-slugify'] },
  };
  await tc.stopCoordinator(coordinator);
  const a = await tc.startCoordinator({
    id: 'coord-host-a',
    drivers: [createIssueResolutionDriver({ cwd: hostA })],
  });
  const first = await runJob(spec, a);
  for (const t of first.results.tasks) expect(t.status).toBe('TASK_PASSED');
  expect(existsSync(path.join(hostA, 'results/cross-host/js-slugify/result.json'))).toBe(true);
  await tc.stopCoordinator(a);

  const b = await tc.startCoordinator({
    id: 'coord-host-b',
    drivers: [createIssueResolutionDriver({ cwd: hostB })],
  });
  const second = await runJob(spec, b);
  expect(second.results.tasks).toHaveLength(2);
  for (const t of second.results.tasks) {
    expect(t.status).toBe('TASK_PASSED');
    expect(detailsOf(t)['resumedFrom']).toBe(first.jobId);
    expect(t.artifacts).toEqual([]); // no sandbox, no grading
  }
  expect(existsSync(path.join(hostB, 'results/cross-host/js-slugify/result.json'))).toBe(false);
});
