import { Kvm } from '@nats-io/kv';
import { kvBucketName } from '@troupe/proto';
import { startNatsServer, waitFor, type NatsServerHandle } from '@troupe/testkit';
import { remindAt } from '../../src/reminders';
import { TestCluster, type TestProcess } from '@troupe/test-cluster';
import { startHost } from './helpers';

let server: NatsServerHandle;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});

// Fast failure detection for the test: a 1 s leader lease renewed every 200 ms.
const startCoordinator = (tc: TestCluster, id: string): TestProcess =>
  tc.spawnCoordinator({ id, config: { leaseMs: 1_000, renewMs: 200 } });

test('leader killed: the standby leads, and pending wakes and reminders fire', async () => {
  const tc = await TestCluster.start({ nats: server, coordinator: false, actors: true });
  const { cluster, actors: client } = tc;
  const kv = await new Kvm(client.nc).create(kvBucketName(cluster, 'leases'), { history: 1 });
  const leaderOf = async () => (await kv.get('coordinator'))?.json<{ holder: string }>().holder;
  const a = startCoordinator(tc, 'coord-a');
  let b: TestProcess | undefined;
  let host: TestProcess | undefined;
  try {
    await waitFor(async () => (await leaderOf()) === 'coord-a', { timeoutMs: 15_000 });
    b = startCoordinator(tc, 'coord-b');
    await b.waitForLine((l) => l.includes('coordinator started'));
    host = await startHost(server.url, cluster, 'h1');
    const ref = client.refOf({ kind: 'worker', id: 'r1' });
    expect(await ref.ask('where', {})).toBe('h1');
    // A reminder due after the takeover, and a wake for a sleeping actor posted during it.
    await remindAt(client.nc, cluster, { kind: 'worker', id: 'r1' }, Date.now() + 2_500, 'append', {
      entry: 'reminded',
    });
    await a.kill('SIGKILL');
    await client.refOf({ kind: 'worker', id: 'r2' }).post('append', { entry: 'woken' });
    await waitFor(async () => (await leaderOf()) === 'coord-b', {
      timeoutMs: 15_000,
      message: 'standby did not take over',
    });
    const read = async (id: string) =>
      (
        (await client.states.read({ kind: 'worker', id }))?.record.data as
          { entries: string[] } | undefined
      )?.entries;
    await waitFor(async () => (await read('r2'))?.includes('woken'), {
      timeoutMs: 20_000,
      message: 'wake lost',
    });
    await waitFor(async () => (await read('r1'))?.includes('reminded'), {
      timeoutMs: 20_000,
      message: 'reminder lost',
    });
    expect(await read('r1')).toEqual(['reminded']);
  } finally {
    await host?.kill('SIGKILL');
    await a.kill('SIGKILL');
    await b?.kill('SIGKILL');
    await tc.stop();
  }
});
