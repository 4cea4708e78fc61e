import path from 'node:path';
import { JetStreamJournalStore } from '@troupe/evolve';
import { type JobEventRecord } from '@troupe/coordinator';
import { waitFor } from '@troupe/testkit';
import { createEvolveDriver, evolveJournalTaskId } from '../../src/evolve';
import { TestCluster } from '@troupe/test-cluster';

// The evolve driver end to end: a real nats-server, coordinator (job runtime, task actors) and
// node agent (Docker sandboxes, image troupe-python-slim), a tiny search of binpacking-or3 with a
// JetStream journal.

jest.setTimeout(600_000);

const SUITE = path.resolve(__dirname, '../../suites/binpacking-or3');

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

async function readArtifact(jobId: string, artifactPath: string): Promise<string> {
  const reader = await tc.coordinator.jobs!.artifact(jobId, artifactPath);
  const chunks: Uint8Array[] = [];
  for await (const c of reader.chunks) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

test('a tiny binpacking-or3 search selects a valid program, grades it on test and cleans up', async () => {
  const started = Date.now();
  const jobs = tc.coordinator.jobs!;
  const record = await jobs.submit({
    spec: {
      kind: 'evolve',
      concurrency: 1,
      taskTimeoutMs: 400_000,
      retries: { max: 0 },
      config: { evaluatorSlots: 2 },
      tasks: [
        {
          id: 'or3',
          suite: SUITE,
          limits: { maxEvaluations: 8, maxGenerations: 3 },
          search: { islands: 2, draftsPerIsland: 1, childrenPerGeneration: 3, seed: 1 },
        },
      ],
    },
  });
  const events: JobEventRecord[] = [];
  for await (const e of await jobs.watch(record.jobId, { signal: AbortSignal.timeout(500_000) })) {
    events.push(e);
  }
  const elapsedMs = Date.now() - started;
  expect(events[events.length - 1]?.type).toBe('JOB_FINISHED');
  const results = await jobs.results(record.jobId);
  const task = results.tasks[0]!;
  expect(task.status).toBe('TASK_PASSED');
  const details = task.details as Record<string, unknown>;
  expect(details['status']).toBe('succeeded');
  expect(details['random_no_valid']).toBe(false);
  expect(typeof details['validationScore']).toBe('number');
  expect(typeof details['testScore']).toBe('number');
  expect(task.score).toBe(details['testScore']);
  // OR3 bins: between the L1 bound and twice it (a sane, checked packing).
  expect(task.score).toBeGreaterThan(201);
  expect(task.score).toBeLessThan(403);
  expect(details['evaluations']).toBeLessThanOrEqual(8);
  expect(details['selectedProgramHash']).toMatch(/^[0-9a-f]{64}$/);
  // Progress lines: one per generation closed, with the suite's reference numbers.
  const logs = events.filter((e) => e.type === 'LOG').map((e) => e.message ?? '');
  process.stderr.write(`${logs.join('\n')}\n`);
  expect(logs.some((l) => l.includes('generation 0 closed') && l.includes('bestFit 212'))).toBe(
    true,
  );

  const names = task.artifacts.map((a) => a.slice(a.lastIndexOf('/') + 1)).sort();
  expect(names).toEqual(['journal-summary.json', 'journal.jsonl', 'program.py', 'report.html']);
  const byName = (n: string) => task.artifacts.find((a) => a.endsWith(`/${n}`))!;
  const program = await readArtifact(record.jobId, byName('program.py'));
  expect(program).toContain('troupe:param');
  const html = await readArtifact(record.jobId, byName('report.html'));
  expect(html).toContain('<svg');
  expect(html).toContain('bestFit');
  expect(html).not.toMatch(/<script|https?:\/\/(?!www\.w3\.org)/);
  const summary = JSON.parse(await readArtifact(record.jobId, byName('journal-summary.json')));
  expect(summary.selectedProgramHash).toBe(details['selectedProgramHash']);

  // The journal is in JetStream, keyed by job and task, and ends with the final record.
  const read = await journal.read(evolveJournalTaskId(record.jobId, 'or3'));
  expect(read.records[read.records.length - 1]?.type).toBe('final');

  // No evaluator sandbox left behind.
  await waitFor(async () => (await tc.containers()).length === 0, {
    timeoutMs: 30_000,
    message: 'no sandbox container of the cluster left',
  });
  // A measured run, for the report.
  process.stderr.write(
    `evolve int: ${elapsedMs} ms, validation ${String(details['validationScore'])}, test ${String(
      details['testScore'],
    )}, evaluations ${String(details['evaluations'])}, queueMs ${String(details['queueMs'])}, chargedMs ${String(details['chargedMs'])}\n`,
  );
});

test('a search whose seed never scores stops after its first round and fails its task with the reason', async () => {
  const jobs = tc.coordinator.jobs!;
  const record = await jobs.submit({
    spec: {
      kind: 'evolve',
      concurrency: 1,
      taskTimeoutMs: 300_000,
      retries: { max: 0 },
      config: { evaluatorSlots: 2 },
      tasks: [{ id: 'broken', suite: path.resolve(__dirname, 'evolve-fixtures/broken-suite') }],
    },
  });
  const events: JobEventRecord[] = [];
  for await (const e of await jobs.watch(record.jobId, { signal: AbortSignal.timeout(300_000) })) {
    events.push(e);
  }
  expect(events.at(-1)?.type).toBe('JOB_FINISHED');
  const task = (await jobs.results(record.jobId)).tasks[0]!;
  // The seed itself is buggy: searching from it is pointless, and the task says why.
  expect(task.status).toBe('TASK_ERRORED');
  expect(task.error).toContain('task.yaml.seeds[0]');
  expect(task.error).toMatch(/seed seed\/program\.py must score, but it did not score: error/);
  const read = await journal.read(evolveJournalTaskId(record.jobId, 'broken'));
  // Generation 0 only (the seed and one draft per island), then the final selection.
  const nodes = read.records.filter((r) => r.type === 'node');
  expect(nodes.length).toBe(3);
  expect(read.records.some((r) => r.type === 'stop' && r.reason === 'requested')).toBe(true);
  const final = read.records.at(-1);
  expect(final?.type === 'final' && final.selection.source).toBe('random_no_valid');
});
