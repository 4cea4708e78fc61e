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
