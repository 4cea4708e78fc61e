import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { ActorSystem, noopLogger } from '@troupe/actors';
import { coordSubject } from '@troupe/proto';
import { startNatsServer, waitFor, type NatsServerHandle } from '@troupe/testkit';
import { HostRegistry, type HostRecord } from '../../src/host-registry';
import { Tally } from './helpers';

// Chaos seeds 4021/4024: a leader paused past its lease won it back and started a new registry.
// Every host's heartbeat had gone to the paused process and was never answered; the new registry
// gave the hosts it loaded one grace period (3 heartbeats) from loading, shorter than a host's
// wait for that lost request, and declared every live host dead — fencing its running sandboxes.

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

/** A registry (200 ms heartbeats) on bucket `bucket` and a host `h1` registering with it. */
async function registryWithHost(cluster: string, bucket: string) {
  const kv = await new Kvm(nc).create(bucket);
  const options = { nc, cluster, kv, log: noopLogger, heartbeatMs: 200, missedHeartbeats: 3 };
  const first = new HostRegistry(options);
  await first.start();
  const host = await ActorSystem.start({
    cluster,
    servers: server.url,
    hostId: 'h1',
    hosting: [Tally],
    placement: 'none',
  });
  return { kv, options, first, host };
}

test('a new registry does not declare dead a live host whose last heartbeat was lost', async () => {
  const cluster = 'takeover';
  const { options, first, host } = await registryWithHost(cluster, 'takeover_nodes');
  let second: HostRegistry | undefined;
  const blackHoles: Subscription[] = [];
  try {
    await waitFor(() => first.isAlive('h1'), { timeoutMs: 10_000 });
    const incarnation = first.get('h1')?.info.incarnation;
    // The leader pauses: its subscriptions stay and swallow the host's requests unanswered.
    let swallowed = 0;
    for (const verb of ['heartbeat', 'register']) {
      blackHoles.push(
        nc.subscribe(coordSubject(cluster, 'nodes', verb), { callback: () => void swallowed++ }),
      );
    }
    first.stop();
    await waitFor(() => swallowed > 0, { timeoutMs: 5_000 });
    // It comes back as a new leader at once: a new registry loads the hosts.
    const dead: HostRecord[] = [];
    const startedAt = Date.now();
    second = new HostRegistry({ ...options, onHostDead: (r) => dead.push(r) });
    await second.start();
    for (const s of blackHoles.splice(0)) s.unsubscribe();
    // The host's next heartbeat reaches the new registry: it is alive, never declared dead,
    // and keeps its incarnation (it was not fenced).
    await waitFor(() => (second?.get('h1')?.lastHeartbeatUnixMs ?? 0) > startedAt, {
      timeoutMs: 10_000,
    });
    expect(dead.map((r) => r.reason)).toEqual([]);
    expect(second.get('h1')).toEqual(
      expect.objectContaining({ state: 'ALIVE', info: expect.objectContaining({ incarnation }) }),
    );
  } finally {
    for (const s of blackHoles) s.unsubscribe();
    second?.stop();
    first.stop();
    await host.shutdown({ graceMs: 0 });
  }
});

// Chaos seed 8237: the write of a restarted node agent's registration was lost in a NATS server's
// loss, so the next leader loaded the host's previous incarnation. Its presence check found the
// live incarnation answering and declared the loaded one dead, then answered the live one's
// heartbeat "a newer incarnation of this host is registered": the live node agent fenced every
// activation it had. A heartbeat of another incarnation than a DEAD record's now re-registers.
test('a registry that loaded a stale incarnation does not fence the live one', async () => {
  const { kv, options, first, host } = await registryWithHost(
    'stale-incarnation',
    'stale_incarnation_nodes',
  );
  let second: HostRegistry | undefined;
  try {
    await waitFor(() => first.isAlive('h1'), { timeoutMs: 10_000 });
    const live = first.get('h1')!.info;
    first.stop();
    // The store holds an earlier incarnation of h1 (the live one's registration never landed).
    await kv.put(
      'h1',
      JSON.stringify({
        info: { ...live, incarnation: 'earlier-incarnation' },
        state: 'ALIVE',
        lastHeartbeatUnixMs: Date.now(),
      }),
    );
    const dead: HostRecord[] = [];
    second = new HostRegistry({ ...options, onHostDead: (r) => dead.push(r) });
    await second.start();
    await second.checkPresence();
    await waitFor(() => second?.get('h1')?.info.incarnation === live.incarnation, {
      timeoutMs: 10_000,
      message: 'the live incarnation registered with the new registry',
    });
    // The stale record was declared dead; the live host kept its incarnation (a host that fences
    // its activations takes a new one) and is alive.
    expect(dead.map((r) => r.info.incarnation)).toEqual(['earlier-incarnation']);
    expect(second.get('h1')?.state).toBe('ALIVE');
  } finally {
    second?.stop();
    first.stop();
    await host.shutdown({ graceMs: 0 });
  }
});
