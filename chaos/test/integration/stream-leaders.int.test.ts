import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { type NatsClusterHandle, startNatsCluster } from '@troupe/testkit';
import { StreamLeaderWatch } from '../../src/stream-leaders';

// The chaos harness's measure of the cluster's own part of a recovery: a stream whose leader's
// server is killed has no leader until a follower's election timeout (4–9 s) has passed, and the
// watch must wait for that, not for the first stream that answers.

jest.setTimeout(120_000);

let cluster: NatsClusterHandle;
let nc: NatsConnection;

beforeAll(async () => {
  cluster = await startNatsCluster({ size: 3, args: ['--no_advertise'] });
  nc = await connect({ servers: cluster.urls, maxReconnectAttempts: -1 });
});

afterAll(async () => {
  await nc?.close();
  await cluster?.stop();
});

test('a healthy cluster is led at once', async () => {
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: 'HEALTHY', subjects: ['healthy.>'], num_replicas: 3 });
  const started = Date.now();
  const watch = await StreamLeaderWatch.start(nc);
  const ledAt = await watch.led();
  expect(ledAt).toBeDefined();
  expect(ledAt! - started).toBeLessThan(5_000);
});

test('a stream whose leader is killed is led again only after an election', async () => {
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: 'VICTIM', subjects: ['victim.>'], num_replicas: 3 });
  const leader = (await jsm.streams.info('VICTIM')).cluster?.leader;
  expect(leader).toMatch(/^s[123]$/);
  const server = cluster.servers[Number(leader!.slice(1)) - 1]!;
  await server.kill();
  const killedAt = Date.now();
  const watch = await StreamLeaderWatch.start(nc);
  const ledAt = await watch.led();
  expect(ledAt).toBeDefined();
  // Followers campaign 4–9 s after the last heartbeat (sent at most 1 s before the kill).
  expect(ledAt! - killedAt).toBeGreaterThanOrEqual(2_500);
  const after = (await jsm.streams.info('VICTIM')).cluster?.leader;
  expect(after).toBeDefined();
  expect(after).not.toBe(leader);
  await server.restart();
});

test('starts while JetStream does not answer at all, and says when it is led again', async () => {
  // Every server down: nothing answers, not even the API check the start must not make. (With
  // one survivor, a stream leader that has lost its quorum still answers reads for a few
  // seconds before it steps down: a CI run saw the watch led within 3 s.)
  const all = [cluster.servers[0]!, cluster.servers[1]!, cluster.servers[2]!];
  for (const s of all) await s.kill();
  const watch = await StreamLeaderWatch.start(nc, 3_000);
  expect(await watch.led()).toBeUndefined();
  for (const s of all) await s.restart();
  const again = await StreamLeaderWatch.start(nc);
  expect(await again.led()).toBeDefined();
});
