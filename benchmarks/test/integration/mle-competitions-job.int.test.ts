import { cp, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type JobEventRecord } from '@troupe/coordinator';
import { JetStreamJournalStore } from '@troupe/evolve';
import { TestCluster } from '@troupe/test-cluster';
import { waitFor } from '@troupe/testkit';
import { createEvolveDriver } from '../../src/evolve';

// A suite of MLE-bench competitions as one evolve job (issue 20 items 1 and 7): the task naming
// a folder with competitions/ becomes one search per competition, run at once, each graded
// sealed; every task reports its medal and cost, the job a per-competition table, and each
// task's report draws its search curve against the medal thresholds.

jest.setTimeout(600_000);

const FIXTURE = path.resolve(__dirname, 'evolve-fixtures/mle-competition');

let tc: TestCluster;
let suite: string;

beforeAll(async () => {
  suite = await mkdtemp(path.join(os.tmpdir(), 'mle-suite-'));
  for (const name of ['alpha', 'beta']) {
    await cp(FIXTURE, path.join(suite, 'competitions', name), { recursive: true });
  }
  tc = await TestCluster.start({
    coordinator: {
      drivers: ({ nc, cluster }) => [
        createEvolveDriver({ journal: new JetStreamJournalStore({ connection: nc, cluster }) }),
      ],
    },
    nodeAgent: {},
  });
});

afterAll(async () => {
  await tc?.stop();
  await rm(suite, { recursive: true, force: true });
});

async function readArtifact(jobId: string, artifactPath: string): Promise<string> {
  const reader = await tc.coordinator.jobs!.artifact(jobId, artifactPath);
  const chunks: Uint8Array[] = [];
  for await (const c of reader.chunks) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

test('two competitions run as one job: a search each, medals, cost and curves', async () => {
  const jobs = tc.coordinator.jobs!;
  const record = await jobs.submit({
    spec: {
      kind: 'evolve',
      concurrency: 2,
      taskTimeoutMs: 400_000,
      retries: { max: 0 },
      config: { evaluatorSlots: 1 },
      tasks: [{ id: 'mle', suite, limits: { maxEvaluations: 3 }, search: { seed: 0 } }],
    },
  });
  const events: JobEventRecord[] = [];
  for await (const e of await jobs.watch(record.jobId, { signal: AbortSignal.timeout(500_000) })) {
    events.push(e);
  }
  expect(events.at(-1)?.type).toBe('JOB_FINISHED');
  const results = await jobs.results(record.jobId);
  expect(results.tasks.map((t) => t.taskId).sort()).toEqual(['mle-alpha', 'mle-beta']);
  for (const task of results.tasks) {
    const details = task.details as Record<string, unknown>;
    expect(task.status).toBe('TASK_PASSED');
    expect(typeof details['testScore']).toBe('number');
    expect(['gold', 'silver', 'bronze', 'above_median', 'none']).toContain(details['medal']);
    expect(details['costUsd']).toBe(0);
    expect(details['evaluations']).toBeLessThanOrEqual(3);
    const report = task.artifacts.find((a) => a.endsWith('/report.html'))!;
    const html = await readArtifact(record.jobId, report);
    expect(html).toContain('<svg');
    expect(html).toContain('medal');
    expect(html).toContain('gold');
  }
  const extra = results.aggregate.extra as Record<string, unknown>;
  const table = extra['competitions'] as Record<string, Record<string, unknown>>;
  expect(Object.keys(table).sort()).toEqual(['mle-alpha', 'mle-beta']);
  for (const row of Object.values(table)) {
    expect(Object.keys(row).sort()).toEqual(['costUsd', 'evaluations', 'medal', 'score']);
  }
  // Both sandboxes of each slot (candidate and grader) are gone.
  await waitFor(async () => (await tc.containers()).length === 0, {
    timeoutMs: 60_000,
    message: 'no sandbox container of the cluster left',
  });
});
