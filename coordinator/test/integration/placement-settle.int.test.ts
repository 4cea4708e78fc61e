import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { ErrorReason, hasReason, noopLogger } from '@troupe/proto';
import { startNatsServer, type NatsServerHandle } from '@troupe/testkit';
import { ClusterPlacement } from '../../src/cluster-placement';
import { HostRegistry } from '../../src/host-registry';

// The placer counts a placement in flight as a pending slot until its directory watch shows the
// actor live. The directory keeps one value per key, so an activation that starts and ends
// between two reads of the watch (a sandbox living ~70 ms) shows only as SLEEPING: the pending
// slot was never given back, and a process-backend soak lost its four sandbox slots one by one.

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

test('an entry written after the placement and not live gives its pending slot back', async () => {
  const kvm = new Kvm(nc);
  const directoryKv = await kvm.create('settle_directory');
  const registry = new HostRegistry({
    nc,
    cluster: 'settle',
    kv: await kvm.create('settle_nodes'),
    log: noopLogger,
  });
  await registry.register({
    hostId: 'h1',
    incarnation: 'i1',
    kinds: ['w'],
    slots: { w: 1 },
    cpu: 1,
    memMb: 1,
    backends: [],
    labels: {},
  });
  const placement = new ClusterPlacement({ registry, directoryKv, log: noopLogger });
  const sleeping = (epoch: number) =>
    JSON.stringify({ state: 'SLEEPING', epoch, updatedAtMs: Date.now() });
  const decidedOn = await directoryKv.put('w.a', sleeping(0));
  await placement.start();
  try {
    const a = await placement.select({
      addr: { kind: 'w', id: 'a' },
      deadlineMs: Date.now() + 10_000,
      directoryRevision: decidedOn,
    });
    expect(a.hostId).toBe('h1');
    expect(placement.used('h1', 'w')).toBe(1);
    // The only slot is pending: the next placement waits for it.
    const b = placement.select({ addr: { kind: 'w', id: 'b' }, deadlineMs: Date.now() + 10_000 });
    // The activation of w.a came and went; the watch sees only its SLEEPING entry, never IDLE.
    await directoryKv.put('w.a', sleeping(1));
    expect((await b).hostId).toBe('h1');
    expect(placement.used('h1', 'w')).toBe(1); // w.b's, not w.a's
  } finally {
    placement.stop();
    registry.stop();
  }
});

test('a kind no live host hosts is refused with reason NO_HOST (GetResults waits on it)', async () => {
  const kvm = new Kvm(nc);
  const registry = new HostRegistry({
    nc,
    cluster: 'no-host',
    kv: await kvm.create('no_host_nodes'),
    log: noopLogger,
  });
  const placement = new ClusterPlacement({
    registry,
    directoryKv: await kvm.create('no_host_directory'),
    log: noopLogger,
  });
  await placement.start();
  try {
    const err = await placement
      .select({ addr: { kind: 'job', id: 'j1' }, deadlineMs: Date.now() + 1_000 })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'UNAVAILABLE', details: { kind: 'job' } });
    expect(hasReason(err, ErrorReason.NO_HOST)).toBe(true);
  } finally {
    placement.stop();
    registry.stop();
  }
});
