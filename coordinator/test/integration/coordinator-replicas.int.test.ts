import { ActorSystem } from '@troupe/actors';
import { jetstreamManager } from '@nats-io/jetstream';
import {
  deadLetterStreamName,
  eventsStreamName,
  inboxStreamName,
  kvBucketName,
  objectStoreName,
} from '@troupe/proto';
import {
  type NatsClusterHandle,
  randomClusterName,
  startNatsCluster,
  waitFor,
} from '@troupe/testkit';
import { Coordinator } from '../../src/coordinator';
import { DriverRegistry } from '../../src/jobs/driver-registry';
import { Tally } from './helpers';

let nats: NatsClusterHandle;
beforeAll(async () => {
  nats = await startNatsCluster({ size: 3 });
});
afterAll(async () => {
  await nats.stop();
});

test('with replicas 3 every stream and bucket is replicated, and losing one of three servers loses no post', async () => {
  const cluster = randomClusterName();
  const coordinator = await Coordinator.start(
    {
      cluster,
      nats: { servers: nats.urls },
      replicas: 3,
      heartbeatMs: 250,
      missedHeartbeats: 8,
      sweepIntervalMs: 500,
      metrics: { port: null },
    },
    { drivers: new DriverRegistry() },
  );
  const host = await ActorSystem.start({
    cluster,
    servers: nats.urls,
    hostId: 'h1',
    hosting: [Tally],
    placement: 'none',
    replicas: 3,
  });
  const client = await ActorSystem.start({ cluster, servers: nats.urls });
  try {
    await waitFor(() => coordinator.registry?.isAlive('h1'), { timeoutMs: 15_000 });
    const ref = client.refOf({ kind: 'tally', id: 't1' });
    const entriesOf = async (): Promise<string[]> =>
      (
        (await client.states.read({ kind: 'tally', id: 't1' }))?.record.data as
          { entries: string[] } | undefined
      )?.entries ?? [];
    for (let i = 0; i < 5; i++) await ref.post('add', { entry: `a${i}` }, { dedupeId: `a${i}` });
    await waitFor(async () => (await entriesOf()).length === 5, { timeoutMs: 20_000 });

    const jsm = await jetstreamManager(client.nc);
    const wanted = [
      inboxStreamName(cluster),
      deadLetterStreamName(cluster),
      eventsStreamName(cluster),
      ...(['directory', 'state', 'nodes', 'leases', 'reminders', 'jobs'] as const).map(
        (b) => `KV_${kvBucketName(cluster, b)}`,
      ),
      `OBJ_${objectStoreName(cluster)}`,
    ];
    const replicasOf = new Map<string, number>();
    for await (const si of jsm.streams.list())
      replicasOf.set(si.config.name, si.config.num_replicas);
    for (const name of wanted) expect([name, replicasOf.get(name)]).toEqual([name, 3]);

    // Lose the server leading the state bucket (the harshest choice): a quorum of two remains.
    const stateStream = await jsm.streams.info(`KV_${kvBucketName(cluster, 'state')}`);
    const leader = stateStream.cluster?.leader;
    const victim = nats.servers.findIndex((_s, i) => `s${i + 1}` === leader);
    expect(victim).toBeGreaterThanOrEqual(0);
    await nats.servers[victim]!.kill();

    // Posts are accepted again once the streams have new leaders (a post is retried with the same
    // dedupe id until acknowledged, as any producer would), and every one of them is processed.
    for (let i = 0; i < 5; i++) {
      await waitFor(
        async () => {
          await ref.post(
            'add',
            { entry: `b${i}` },
            { dedupeId: `b${i}`, signal: AbortSignal.timeout(3_000) },
          );
          return true;
        },
        { timeoutMs: 30_000, message: `post b${i} accepted after the server loss` },
      );
    }
    await waitFor(async () => (await entriesOf()).length === 10, {
      timeoutMs: 30_000,
      message: 'all ten posts processed after the server loss',
    });
    expect(await entriesOf()).toEqual([
      ...Array.from({ length: 5 }, (_, i) => `a${i}`),
      ...Array.from({ length: 5 }, (_, i) => `b${i}`),
    ]);
  } finally {
    await client.shutdown();
    await host.shutdown({ graceMs: 0 });
    await coordinator.stop();
  }
});
