import path from 'node:path';
import { JetStreamJournalStore } from '@troupe/evolve';
import { type JobEventRecord } from '@troupe/coordinator';
import { createEvolveDriver, evolveJournalTaskId } from '../../src/evolve';
import { TestCluster } from '@troupe/test-cluster';

// Issue 20 item 8: a user's own suite never fails silently. A real nats-server, coordinator and
// node agent (Docker sandboxes, image troupe-python-slim).

jest.setTimeout(600_000);

const FIXTURES = path.resolve(__dirname, 'evolve-fixtures');

let tc: TestCluster;
let journal: JetStreamJournalStore;

beforeAll(async () => {
  tc = await TestCluster.start({
    coordinator: {
      drivers: ({ nc, cluster }) => {
        journal = new JetStreamJournalStore({ connection: nc, cluster });
        return [createEvolveDriver({ journal })];
      },
    },
    nodeAgent: {},
  });
});

afterAll(async () => {
  await tc?.stop();
});

async function runJob(spec: Record<string, unknown>) {
  const jobs = tc.coordinator.jobs!;
  const record = await jobs.submit({ spec });
  const events: JobEventRecord[] = [];
  for await (const e of await jobs.watch(record.jobId, { signal: AbortSignal.timeout(500_000) })) {
    events.push(e);
  }
  return { jobId: record.jobId, events, results: await jobs.results(record.jobId) };
}

test("a grader that crashes on every candidate fails the task naming the seed, with the grader's traceback", async () => {
  const { jobId, events, results } = await runJob({
    kind: 'evolve',
    concurrency: 1,
    taskTimeoutMs: 400_000,
    retries: { max: 0 },
    config: { evaluatorSlots: 2 },
    tasks: [{ id: 'crash', suite: path.join(FIXTURES, 'crashing-grader-suite') }],
  });
  expect(events.at(-1)?.type).toBe('JOB_FINISHED');
  const task = results.tasks[0]!;
  // Not a quiet no_valid_program: the task errs with the seed and the grader's stderr.
  expect(task.status).toBe('TASK_ERRORED');
  expect(task.error).toContain('task.yaml.seeds[0]');
  expect(task.error).toContain('seed/program.py');
  expect(task.error).toContain('ZeroDivisionError: division by zero');
  // The journal keeps the traceback on every failed node.
  const read = await journal.read(evolveJournalTaskId(jobId, 'crash'));
  const nodes = read.records.filter((r) => r.type === 'node');
  expect(nodes.length).toBeGreaterThan(0);
  for (const n of nodes) {
    expect(n.type === 'node' && n.outcome).toBe('unscored');
    expect(n.type === 'node' && n.error).toContain('ZeroDivisionError');
  }
  // The search stopped after its first round instead of spending its 12 evaluations.
  expect(nodes.length).toBeLessThan(12);
  expect(read.records.at(-1)?.type).toBe('final');
  // Progress says so too.
  const progress = events.filter((e) => e.type === 'LOG' && /generation 0 closed/.test(e.message));
  expect(progress.some((e) => /failed, last: .*ZeroDivisionError/.test(e.message))).toBe(true);
  // And the report.
  const report = task.artifacts.find((a) => a.endsWith('/report.html'));
  expect(report).toBeDefined();
  const reader = await tc.coordinator.jobs!.artifact(jobId, report!);
  const chunks: Uint8Array[] = [];
  for await (const c of reader.chunks) chunks.push(c);
  expect(Buffer.concat(chunks).toString('utf8')).toContain('ZeroDivisionError');
});

test('a suite names a grader environment: its set-up (apt: [jq]) is built once and the grader runs in it', async () => {
  const { events, results } = await runJob({
    kind: 'evolve',
    concurrency: 1,
    taskTimeoutMs: 900_000,
    retries: { max: 0 },
    config: { evaluatorSlots: 1, saveJournal: false },
    tasks: [
      {
        id: 'env',
        suite: path.join(FIXTURES, 'env-grader-suite'),
        limits: { maxEvaluations: 2, maxGenerations: 1 },
        search: { islands: 1, draftsPerIsland: 1 },
      },
    ],
  });
  const task = results.tasks[0]!;
  // The grader asserts jq runs: without the environment the seed would fail the task.
  expect({ status: task.status, error: task.error }).toEqual({ status: 'TASK_PASSED', error: '' });
  expect(
    events.some(
      (e) => e.type === 'LOG' && /grader environment troupe-env:[0-9a-f]{12}/.test(e.message),
    ),
  ).toBe(true);
});

test('a broken grader environment is refused at submission, naming the entry', async () => {
  const { mkdtemp, cp, writeFile, readFile, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const dir = await mkdtemp(path.join(tmpdir(), 'evolve-env-'));
  try {
    await cp(path.join(FIXTURES, 'env-grader-suite'), dir, { recursive: true });
    const yaml = await readFile(path.join(dir, 'task.yaml'), 'utf8');
    await writeFile(
      path.join(dir, 'task.yaml'),
      yaml.replace('apt: [jq]', "apt: ['jq; rm -rf /']"),
    );
    await expect(
      tc.coordinator.jobs!.submit({ spec: { kind: 'evolve', tasks: [{ id: 'e', suite: dir }] } }),
    ).rejects.toThrow(/task\.yaml\.evaluator\.environment\.apt\[0\]/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
