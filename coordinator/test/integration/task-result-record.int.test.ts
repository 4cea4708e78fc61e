import { JOB_DECIDED_EXECUTION, JobStore, type TaskResultRecord } from '@troupe/coordinator';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { randomClusterName, startNatsServer, type NatsServerHandle } from '@troupe/testkit';

// Chaos seed 9100: coordinator#1 declared coordinator#0 dead and ran task t006's attempt again
// (execution 2). Coordinator#0's activation (execution 1) learned it had been fenced only 2 s
// later; meanwhile its run failed on the sandbox execution 2 had replaced, and it wrote the
// task's result record ERRORED. Written last, that record would have shown in the results over
// execution 2's PASSED one. A result record is written only over one of an earlier attempt or
// execution.

let server: NatsServerHandle;
let nc: NatsConnection;
let store: JobStore;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  store = await JobStore.open(nc, randomClusterName());
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

const record = (
  attempt: number,
  execution: number | undefined,
  status: string,
  index = 0,
): TaskResultRecord => ({
  taskId: `t${index}`,
  index,
  attempt,
  ...(execution !== undefined ? { execution } : {}),
  status,
  costUsd: 0,
  tokens: 0,
  durationMs: 1,
  stopReason: '',
  error: status === 'ERRORED' ? 'sandbox was destroyed' : '',
  artifacts: [`a${attempt}e${execution ?? 0}`],
});

async function stored(jobId: string, index = 0): Promise<TaskResultRecord | undefined> {
  return (await store.taskResultsAt(jobId, [index])).get(index);
}

test("a fenced execution's result written after the newer one's is not recorded", async () => {
  expect(await store.putTaskResult('j-fenced', record(1, 2, 'PASSED'))).toBe(true);
  expect(await store.putTaskResult('j-fenced', record(1, 1, 'ERRORED'))).toBe(false);
  expect(await stored('j-fenced')).toMatchObject({ attempt: 1, execution: 2, status: 'PASSED' });
});

test('a later execution or attempt replaces the record; the same execution rewrites it', async () => {
  expect(await store.putTaskResult('j-later', record(1, 1, 'ERRORED'))).toBe(true);
  expect(await store.putTaskResult('j-later', record(1, 2, 'FAILED'))).toBe(true);
  expect(await stored('j-later')).toMatchObject({ execution: 2, status: 'FAILED' });
  expect(await store.putTaskResult('j-later', record(1, 2, 'PASSED'))).toBe(true);
  expect(await stored('j-later')).toMatchObject({ execution: 2, status: 'PASSED' });
  // A retry's first execution is newer than every execution of the attempt before.
  expect(await store.putTaskResult('j-later', record(2, 1, 'PASSED'))).toBe(true);
  expect(await store.putTaskResult('j-later', record(1, 3, 'ERRORED'))).toBe(false);
  expect(await stored('j-later')).toMatchObject({ attempt: 2, execution: 1, status: 'PASSED' });
  // A record of an earlier version (no execution) counts as execution 0.
  expect(await store.putTaskResult('j-later', record(3, undefined, 'FAILED', 1))).toBe(true);
  expect(await store.putTaskResult('j-later', record(3, 1, 'PASSED', 1))).toBe(true);
  expect(await stored('j-later', 1)).toMatchObject({ execution: 1, status: 'PASSED' });
  // A deleted record (its delete marker) is written over.
  await store.kv.delete('result.j-later.1');
  expect(await store.putTaskResult('j-later', record(1, 1, 'FAILED', 1))).toBe(true);
  expect(await stored('j-later', 1)).toMatchObject({ attempt: 1, status: 'FAILED' });
});

test("the job's record of an attempt that never started is kept over that attempt's", async () => {
  expect(
    await store.putTaskResult('j-decided', record(1, JOB_DECIDED_EXECUTION, 'TIMED_OUT')),
  ).toBe(true);
  // The dispatch ran late after all: the job had ended the attempt, and so do its results.
  expect(await store.putTaskResult('j-decided', record(1, 1, 'PASSED'))).toBe(false);
  expect(await stored('j-decided')).toMatchObject({ status: 'TIMED_OUT' });
  expect(await store.putTaskResult('j-decided', record(2, 1, 'PASSED'))).toBe(true);
  expect(await stored('j-decided')).toMatchObject({ attempt: 2, status: 'PASSED' });
});

test('executions writing at once: the latest is what stays, whatever the order', async () => {
  for (let round = 0; round < 5; round++) {
    const jobId = `j-race-${round}`;
    const order = [1, 2, 3, 4, 5, 6].sort(() => Math.random() - 0.5);
    const written = await Promise.all(
      order.map((e) => store.putTaskResult(jobId, record(1, e, e === 6 ? 'PASSED' : 'ERRORED'))),
    );
    expect(await stored(jobId)).toMatchObject({ execution: 6, status: 'PASSED' });
    // Execution 6 is always written (nothing supersedes it).
    expect(written[order.indexOf(6)]).toBe(true);
  }
});
