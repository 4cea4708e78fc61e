import { JobStore } from '@troupe/coordinator';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ErrorReason, hasReason } from '@troupe/proto';
import { randomClusterName, startNatsServer, type NatsServerHandle } from '@troupe/testkit';

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
