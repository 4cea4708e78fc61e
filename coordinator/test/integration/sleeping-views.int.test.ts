import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { noopLogger } from '@troupe/proto';
import { startNatsServer, waitFor, type NatsServerHandle } from '@troupe/testkit';
import { ClusterPlacement } from '../../src/cluster-placement';
import { HostRegistry } from '../../src/host-registry';

// The placer's in-memory view of sleeping directory entries used to keep every actor the
// cluster ever ran (~0.4 KB each: the long soak's coordinator heap grew 20 MB/h). It keeps the
// most recently written ones.

let server: NatsServerHandle;
let nc: NatsConnection;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
});
afterAll(async () => {
  await nc.close();
  await server.stop();
});

test('peek answers from the newest sleeping entries only, and guesses "never seen" for the rest', async () => {
  const kvm = new Kvm(nc);
  const directoryKv = await kvm.create('sleeping_views_directory');
  const nodesKv = await kvm.create('sleeping_views_nodes');
  const registry = new HostRegistry({
    nc,
    cluster: 'sleeping-views',
    kv: nodesKv,
    log: noopLogger,
  });
  const placement = new ClusterPlacement({
    registry,
    directoryKv,
    log: noopLogger,
    maxSleepingViews: 3,
  });
  const revisions: number[] = [];
  for (let i = 0; i < 5; i++) {
    revisions.push(
      await directoryKv.put(
        `w.a${i}`,
        JSON.stringify({ state: 'SLEEPING', epoch: i + 1, updatedAtMs: Date.now() }),
      ),
    );
  }
  await placement.start();
  try {
    const peekOf = (i: number) => placement.peek({ kind: 'w', id: `a${i}` });
    // The two oldest were dropped: peek guesses revision 0, which the host's claim refuses.
    expect(peekOf(0)?.revision).toBe(0);
    expect(peekOf(1)?.revision).toBe(0);
    for (const i of [2, 3, 4]) {
      expect(peekOf(i)).toEqual({
        entry: expect.objectContaining({ state: 'SLEEPING', epoch: i + 1 }),
        revision: revisions[i],
      });
    }
    // Written again, the oldest becomes the newest and pushes out the next oldest.
    const again = await directoryKv.put(
      'w.a0',
      JSON.stringify({ state: 'SLEEPING', epoch: 9, updatedAtMs: Date.now() }),
    );
    await waitFor(() => peekOf(0)?.revision === again, { timeoutMs: 5_000 });
    expect(peekOf(2)?.revision).toBe(0);
    expect(peekOf(3)?.revision).toBe(revisions[3]);
  } finally {
    placement.stop();
  }
});

test('the sweep’s candidates are the live entries and the sleeping ones marked for recovery', async () => {
  const kvm = new Kvm(nc);
  const directoryKv = await kvm.create('sweep_candidates_directory');
  const nodesKv = await kvm.create('sweep_candidates_nodes');
  const registry = new HostRegistry({
    nc,
    cluster: 'sweep-candidates',
    kv: nodesKv,
    log: noopLogger,
  });
  const placement = new ClusterPlacement({ registry, directoryKv, log: noopLogger });
  const put = (id: string, entry: Record<string, unknown>) =>
    directoryKv.put(`w.${id}`, JSON.stringify({ updatedAtMs: Date.now(), ...entry }));
  for (let i = 0; i < 50; i++) await put(`asleep${i}`, { state: 'SLEEPING', epoch: 1 });
  await put('flagged', { state: 'SLEEPING', epoch: 2, recover: true });
  await put('live', { state: 'IDLE', hostId: 'h1', epoch: 1 });
  await put('stopped', { state: 'STOPPED', epoch: 1, reason: 'x' });
  await placement.start();
  try {
    expect([...placement.sweepCandidates().keys()].sort()).toEqual(['w.flagged', 'w.live']);
    expect(placement.sweepCandidates().get('w.live')?.entry).toMatchObject({ hostId: 'h1' });
    // The watch keeps them current: one falls asleep, another is activated, the flag is cleared.
    await put('live', { state: 'SLEEPING', epoch: 1 });
    await put('asleep7', { state: 'RUNNING', hostId: 'h2', epoch: 2 });
    await put('flagged', { state: 'SLEEPING', epoch: 2 });
    await waitFor(() => [...placement.sweepCandidates().keys()].join() === 'w.asleep7', {
      timeoutMs: 5_000,
    });
    // A retired actor (removed without a marker) is forgotten.
    await put('asleep8', { state: 'SLEEPING', epoch: 3, recover: true });
    await waitFor(() => placement.sweepCandidates().has('w.asleep8'), { timeoutMs: 5_000 });
    placement.forget('w.asleep8');
    expect(placement.sweepCandidates().has('w.asleep8')).toBe(false);
  } finally {
    placement.stop();
  }
});
