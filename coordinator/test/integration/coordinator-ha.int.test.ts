import { Kvm } from '@nats-io/kv';
import { kvBucketName } from '@troupe/proto';
import { startNatsServer, waitFor, type NatsServerHandle } from '@troupe/testkit';
import { BudgetLedger } from '../../src/budget/budget-ledger';
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

test('leader killed: the actors it hosted move to the standby at once, not after the grace period', async () => {
  const tc = await TestCluster.start({ nats: server, coordinator: false, actors: true });
  const { cluster, actors: client } = tc;
  const kv = await new Kvm(client.nc).create(kvBucketName(cluster, 'leases'), { history: 1 });
  const leaderOf = async () => (await kv.get('coordinator'))?.json<{ holder: string }>().holder;
  // A host is declared dead after 80 missed heartbeats (20 s). Before the fix the standby that
  // took over gave the killed leader's host that whole grace period before it recovered the
  // actors the leader hosted (a job's actors, the budget ledger): the job stalled for it.
  const config = { leaseMs: 1_000, renewMs: 200, missedHeartbeats: 80 };
  const a = tc.spawnCoordinator({ id: 'coord-a', config });
  let b: TestProcess | undefined;
  try {
    await waitFor(async () => (await leaderOf()) === 'coord-a', { timeoutMs: 15_000 });
    // The ledger is activated on coord-a, the only host of its kind so far.
    const ledger = new BudgetLedger(client, { timeoutMs: 15_000 });
    await ledger.snapshot();
    const hostOfLedger = async () => (await client.directory.get(ledger.address)).entry.hostId;
    expect(await hostOfLedger()).toBe('coord-a');
    b = tc.spawnCoordinator({ id: 'coord-b', config });
    await b.waitForLine((l) => l.includes('registered with the coordinator'));
    await a.kill('SIGKILL');
    const killedAt = Date.now();
    await waitFor(async () => (await leaderOf()) === 'coord-b', {
      timeoutMs: 15_000,
      message: 'standby did not take over',
    });
    // Well under the 20 s grace period, generous for the takeover (1 s lease) on a loaded host.
    await waitFor(
      async () => {
        try {
          await ledger.snapshot({ timeoutMs: 2_000 });
          return true;
        } catch {
          return false;
        }
      },
      { timeoutMs: 12_000, message: 'the ledger of the killed leader was not recovered' },
    );
    expect(await hostOfLedger()).toBe('coord-b');
    await b.waitForLine((l) => l.includes('its process is gone'));
    process.stderr.write(`ledger recovered ${Date.now() - killedAt} ms after the kill\n`);
  } finally {
    await a.kill('SIGKILL');
    await b?.kill('SIGKILL');
    await tc.stop();
  }
});
