import { JOB_STORE_TIMEOUT_MS, JobEventLog, JobStore } from '@troupe/coordinator';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ErrorReason, hasReason } from '@troupe/proto';
import {
  randomClusterName,
  startNatsServer,
  stopProcess,
  timed,
  type NatsServerHandle,
} from '@troupe/testkit';

// Chaos seed 7044: with two of three NATS servers down, a task actor's result write failed
// "jetstream is not enabled" five times in 4 s; the runtime counted each as a failed attempt,
// dead-lettered the task's message, and the job waited for that task until its deadline. A
// job-store write that NATS fails transiently is a store outage (STORE_UNAVAILABLE), which the
// runtime retries without counting; one that can never succeed is not.

let server: NatsServerHandle;
let nc: NatsConnection;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

const result = (error = '') => ({
  taskId: 't0',
  index: 0,
  attempt: 1,
  status: 'PASSED',
  costUsd: 0,
  tokens: 0,
  durationMs: 1,
  stopReason: '',
  error,
  artifacts: [],
});

// Chaos seed 8007: a KV get is a direct get any replica answers, and a replica catching up after
// its server restarted answered "no such key" for a job submitted seconds before: the job's
// watcher failed NOT_FOUND. A miss is read again from the bucket stream's leader.
test('a job record a lagging replica does not show yet is read from the leader', async () => {
  const store = await JobStore.open(nc, randomClusterName());
  const record = {
    jobId: 'j-lagging',
    name: 'scripted',
    kind: 'scripted',
    state: 'RUNNING' as const,
    reason: '',
    labels: {},
    createdUnixMs: Date.now(),
    progress: { total: 1, done: 0, passed: 0, failed: 0, running: 1, costUsd: 0 },
    specJson: JSON.stringify({ kind: 'scripted', tasks: [{ id: 't0' }] }),
    priority: 0,
    weight: 1,
  };
  await store.createJob(record);
  // The replica that answers the direct get has not caught up: it shows no value.
  const get = jest.spyOn(store.kv, 'get').mockResolvedValue(null);
  try {
    expect(await store.getJob('j-lagging')).toEqual(record);
    expect(get).toHaveBeenCalledTimes(1);
    // A job that does not exist is still not found (by the leader too).
    expect(await store.findJob('j-never')).toBeUndefined();
    // Nor one that was deleted.
    get.mockRestore();
    await store.kv.delete('job.j-lagging');
    jest.spyOn(store.kv, 'get').mockResolvedValue(null);
    expect(await store.findJob('j-lagging')).toBeUndefined();
  } finally {
    jest.restoreAllMocks();
  }
});

// Chaos seed 8927: a job actor's store request sent while a stream elected its leader was lost,
// waited out the client's 5 s timeout, and the turn ran again only then — 4 s after the streams
// had leaders. A stopped server (SIGSTOP) answers nothing, as a leaderless stream does: the job
// store and the event log give up after JOB_STORE_TIMEOUT_MS, as a store outage to retry.
test('a job-store or event-log request nobody answers fails after 2 s as an outage', async () => {
  const cluster = randomClusterName();
  const store = await JobStore.open(nc, cluster);
  const events = await JobEventLog.open(nc, cluster);
  await store.putTaskResult('j-1', result());
  await stopProcess(server.pid);
  try {
    const write = await timed(() => store.putTaskResult('j-1', result()));
    expect(hasReason(write.err, ErrorReason.STORE_UNAVAILABLE)).toBe(true);
    const read = await timed(() => store.getJob('j-1'));
    expect(read.err).toBeInstanceOf(Error);
    const append = await timed(() =>
      events.append([
        { jobId: 'j-1', sequence: 1, type: 'LOG', timeUnixMs: Date.now(), message: 'x' },
      ] as never),
    );
    expect(append.err).toBeInstanceOf(Error);
    for (const { ms } of [write, read, append]) {
      expect(ms).toBeGreaterThanOrEqual(JOB_STORE_TIMEOUT_MS - 100);
      expect(ms).toBeLessThan(4_000);
    }
  } finally {
    process.kill(server.pid, 'SIGCONT');
  }
  // The server answers again: so does the store.
  await store.putTaskResult('j-1', result());
}, 30_000);

// Last: it stops the server.
test('a write NATS fails transiently is a store outage; one that can never succeed is not', async () => {
  const store = await JobStore.open(nc, randomClusterName());
  await store.putTaskResult('j-1', result());
  // Over the server's max_payload: never succeeds, so not an outage to wait out.
  const tooBig = await store
    .putTaskResult('j-1', result('x'.repeat(2 * 1024 * 1024)))
    .catch((e: unknown) => e);
  expect(tooBig).toBeInstanceOf(Error);
  expect(hasReason(tooBig, ErrorReason.STORE_UNAVAILABLE)).toBe(false);

  await server.stop();
  const down = await store.putTaskResult('j-1', result()).catch((e: unknown) => e);
  expect(hasReason(down, ErrorReason.STORE_UNAVAILABLE)).toBe(true);
  expect((down as Error).message).toBe('job store unavailable');
}, 30_000);
