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
