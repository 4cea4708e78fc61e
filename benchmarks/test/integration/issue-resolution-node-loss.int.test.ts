import path from 'node:path';
import { type JobEventRecord } from '@troupe/coordinator';
import { waitFor } from '@troupe/testkit';
import { createIssueResolutionDriver } from '../../src/issue-resolution';
import { TestCluster } from '@troupe/test-cluster';

// A node agent dies mid-job: two `troupe-node-agent` processes host the sandboxes and evaluators
// of a gold bugfix-mini job; once one of them holds a task's sandbox it is killed with SIGKILL.
// Its tasks are retried on the other agent and the job completes with every task passed; a
// node agent restarted with the dead one's host id reaps what it left, so no container remains.

jest.setTimeout(900_000);

const SUITE = path.resolve(__dirname, '../../suites/bugfix-mini');
let tc: TestCluster;

const spawnAgent = (hostId: string) =>
  tc.spawnNodeAgent(hostId, { TROUPE_SLOTS: 'sandbox=2,evaluator=2' });

beforeAll(async () => {
  tc = await TestCluster.start({
    coordinator: { drivers: [createIssueResolutionDriver()] },
    docker: true,
  });
});

afterAll(async () => {
  await tc?.stop();
});

test('a node agent killed mid-job: its tasks are retried elsewhere, the job completes, nothing leaks', async () => {
  const doomed = spawnAgent('doomed-host');
  spawnAgent('survivor-host');
  await tc.waitForHost('doomed-host');
  await tc.waitForHost('survivor-host');

  const jobs = tc.coordinator.jobs!;
  const record = await jobs.submit({
    spec: {
      kind: 'issue-resolution',
      concurrency: 4,
      taskTimeoutMs: 300_000,
      retries: { max: 3, backoffMs: 500, maxBackoffMs: 2_000 },
      // Images exist already: a request lost with the dead host fails after 30 s, not 5 min.
      config: { agent: { kind: 'gold' }, createTimeoutMs: 30_000 },
      tasks: { suite: SUITE },
    },
  });
  const events: JobEventRecord[] = [];
  const watching = (async () => {
    for await (const e of await jobs.watch(record.jobId, {
      signal: AbortSignal.timeout(800_000),
    })) {
      events.push(e);
    }
  })();

  // Kill the doomed agent while it holds an agent sandbox of a running task.
  await waitFor(async () => (await tc.containers(['troupe.host=doomed-host'])).length > 0, {
    timeoutMs: 300_000,
    intervalMs: 100,
    message: 'a sandbox on the doomed host',
  });
  await doomed.kill('SIGKILL');

  await watching;
  expect(events[events.length - 1]?.type).toBe('JOB_FINISHED');
  const results = await jobs.results(record.jobId);
  expect(results.tasks.length).toBeGreaterThanOrEqual(8);
  for (const t of results.tasks) {
    if (t.status !== 'TASK_PASSED') {
      process.stderr.write(`${t.taskId} ${t.status} attempts ${t.attempts}: ${t.error}\n`);
    }
  }
  for (const t of results.tasks) expect([t.taskId, t.status]).toEqual([t.taskId, 'TASK_PASSED']);
  // The interrupted work was retried (a later attempt, or a replayed execution).
  const retried = results.tasks.filter((t) => t.attempts > 1);
  expect(retried.length).toBeGreaterThan(0);
  expect(events.some((e) => e.type === 'TASK_RETRY')).toBe(true);

  // The dead host's containers are orphans until a node agent with its host id reaps them.
  spawnAgent('doomed-host');
  await tc.waitForHost('doomed-host');
  await waitFor(async () => (await tc.containers([])).length === 0, {
    timeoutMs: 120_000,
    message: 'no container of the cluster left',
  });
});
