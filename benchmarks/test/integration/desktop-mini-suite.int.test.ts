import { readFileSync } from 'node:fs';
import path from 'node:path';
import { type JobEventRecord } from '@troupe/coordinator';
import { TestCluster } from '@troupe/test-cluster';
import { parse } from 'yaml';
import { createDesktopTasksDriver } from '../../src';
import { loadDesktopSuite } from '../../src/desktop-tasks/desktop-task-spec';

// The shipped desktop-mini suite on both backends, through the shipped job files: the gold agent
// (each task's reference actions) passes every task and the untouched environment (`none`) fails
// every task, on Docker desktops and on QEMU guests (TCG here, as `auto` would pick on this
// host). The jobs run as users run them — a real coordinator, a real node agent hosting the
// environments, the evaluator reading machine state — so this checks the suite, the harness and
// both backends together. A retried attempt (an application slow to start on a loaded host) is
// allowed, as the shipped jobs allow it; a task that ends with an error is not.

jest.setTimeout(1_800_000);

const REPO = path.resolve(__dirname, '../../..');
const SUITE_DIR = path.join(REPO, 'benchmarks/suites/desktop-mini');
let TASK_IDS: string[];

let tc: TestCluster;

beforeAll(async () => {
  TASK_IDS = (await loadDesktopSuite('benchmarks/suites/desktop-mini', REPO, 'suite'))
    .map((t) => t.id)
    .sort();
  tc = await TestCluster.start({
    coordinator: { drivers: [createDesktopTasksDriver({ baseDir: REPO })] },
    // Two warm guests: the vm jobs run two tasks at a time, each create restores a warm VM.
    nodeAgent: { vm: { enabled: 'on', accel: 'tcg', warm: 2 } },
  });
});

afterAll(async () => {
  await tc?.stop();
});

/**
 * Submits the suite's job file `name` and returns each task's status and error by task id. A
 * task's error is its last failed attempt's even when a retry then ended graded (the TaskResult
 * contract): the error of a task whose attempt was retried is replaced by `retried`, so
 * a retried attempt is allowed and an error no retry followed is not.
 */
async function runJobFile(name: string): Promise<Record<string, [string, string]>> {
  const spec = parse(readFileSync(path.join(SUITE_DIR, name), 'utf8')) as Record<string, unknown>;
  const jobs = tc.coordinator.jobs!;
  const record = await jobs.submit({ spec });
  const events: JobEventRecord[] = [];
  for await (const e of await jobs.watch(record.jobId, {
    signal: AbortSignal.timeout(1_500_000),
  })) {
    events.push(e);
  }
  expect(events.at(-1)?.type).toBe('JOB_FINISHED');
  const retried = new Set(events.filter((e) => e.type === 'TASK_RETRY').map((e) => e.taskId));
  const results = await jobs.results(record.jobId);
  return Object.fromEntries(
    results.tasks.map((t) => [
      t.taskId,
      [t.status, t.error && retried.has(t.taskId) ? 'retried' : t.error],
    ]),
  );
}

/** What every task of the suite must end as: the status, and no error but a retried one. */
function every(status: string): Record<string, [string, unknown]> {
  const noError = expect.stringMatching(/^(retried)?$/) as unknown;
  return Object.fromEntries(TASK_IDS.map((id) => [id, [status, noError]]));
}

test('the suite has at least ten tasks, two of them infeasible', async () => {
  const tasks = await loadDesktopSuite('benchmarks/suites/desktop-mini', REPO, 'suite');
  expect(tasks.length).toBeGreaterThanOrEqual(10);
  expect(tasks.filter((t) => t.evaluator.metric.type === 'infeasible').length).toBeGreaterThan(1);
});

describe.each([
  ['desktop (Docker)', 'job.gold.yaml', 'job.none.yaml'],
  ['vm (QEMU)', 'job.gold.vm.yaml', 'job.none.vm.yaml'],
])('%s backend', (_backend, goldFile, noneFile) => {
  test(`gold passes every task (${goldFile})`, async () => {
    expect(await runJobFile(goldFile)).toEqual(every('TASK_PASSED'));
  });

  test(`the untouched environment fails every task (${noneFile})`, async () => {
    expect(await runJobFile(noneFile)).toEqual(every('TASK_FAILED'));
  });
});
