import {
  ActorSystem,
  defineActor,
  noopLogger,
  StoreUnavailableError,
  watchConnectionStatus,
} from '@troupe/actors';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { inboxStreamName } from '@troupe/proto';
import {
  type NatsServerHandle,
  randomClusterName,
  startNatsServer,
  startTcpProxy,
  waitFor,
} from '@troupe/testkit';
import { Coordinator } from '../../src/coordinator';
import { type TestProcess } from '@troupe/test-cluster';
import { z } from 'zod';
import { startHost, Tally } from './helpers';

// Recovery of posted messages that no mail hint and no wake-on-post will ever announce again:
// the hint went to a host that was away, and the watcher had already seen the post.

let server: NatsServerHandle;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});

/** Connection status events of `nc`, as they happen. */
function statusLog(nc: NatsConnection): string[] {
  const events: string[] = [];
  watchConnectionStatus(nc, (s) => events.push(s.type), noopLogger);
  return events;
}

/**
 * A host of `Tally` whose NATS connection goes through a TCP proxy the test can cut, with its
 * connection's status events.
 */
async function proxiedHost(cluster: string, hostId: string) {
  const proxy = await startTcpProxy({ target: { port: server.port } });
  const hostNc = await connect({
    servers: proxy.url,
    reconnectTimeWait: 200,
    maxReconnectAttempts: -1,
  });
  const hostEvents = statusLog(hostNc);
  const host = await ActorSystem.start({
    cluster,
    connection: hostNc,
    hostId,
    hosting: [Tally],
    placement: 'none',
  });
  return { proxy, hostNc, hostEvents, host };
}

test('a post announced only while its host was disconnected is processed once the host reconnects', async () => {
  const cluster = randomClusterName();
  // A death window (10 s) far longer than the partition: the host is never declared dead, so
  // only the host itself can notice the post.
  const coordinator = await Coordinator.start({
    cluster,
    nats: { servers: server.url },
    heartbeatMs: 250,
    missedHeartbeats: 40,
    sweepIntervalMs: 500,
    metrics: { port: null },
  });
  const { proxy, hostNc, hostEvents, host } = await proxiedHost(cluster, 'h1');
  const client = await ActorSystem.start({ cluster, servers: server.url });
  try {
    await waitFor(() => coordinator.registry?.isAlive('h1'), { timeoutMs: 10_000 });
    const ref = client.refOf({ kind: 'tally', id: 't1' });
    const stored = async () => await client.states.read({ kind: 'tally', id: 't1' });
    const entriesOf = async () =>
      ((await stored())?.record.data as { entries: string[] } | undefined)?.entries ?? [];
    await ref.post('add', { entry: 'a' });
    await waitFor(async () => (await entriesOf()).length === 1, { timeoutMs: 10_000 });

    proxy.cut();
    await waitFor(() => hostEvents.includes('disconnect'), { timeoutMs: 5_000 });
    const { seq } = await ref.post('add', { entry: 'b' });
    // The poster's hint went to nobody; wait until the coordinator's wake-on-post watcher has
    // handled the post too (the actor is live, so it only hinted, to nobody, and acknowledged).
    const jsm = await jetstreamManager(client.nc);
    await waitFor(
      async () =>
        (await jsm.consumers.info(inboxStreamName(cluster), 'troupe-wake')).ack_floor.stream_seq >=
        seq,
      { timeoutMs: 10_000, message: 'the wake-on-post watcher acknowledged the post' },
    );
    expect(await entriesOf()).toEqual(['a']);

    proxy.restore();
    await waitFor(() => hostEvents.includes('reconnect'), { timeoutMs: 10_000 });
    // (A read in flight when the link was cut is lost with it and times out after 5 s first.)
    await waitFor(async () => (await entriesOf()).length === 2, {
      timeoutMs: 20_000,
      message: 'the post made while the host was away is processed after its reconnect',
    });
    expect(await entriesOf()).toEqual(['a', 'b']);
    // The same activation did it: the host was never declared dead, nothing was re-placed.
    expect((await stored())?.record.epoch).toBe(1);
    expect(coordinator.registry?.get('h1')?.state).toBe('ALIVE');
  } finally {
    await client.shutdown();
    await host.shutdown({ graceMs: 0 });
    await hostNc.close();
    await proxy.stop();
    await coordinator.stop();
  }
});

test('an actor with a pending post whose only host was declared dead is re-placed when a host is back', async () => {
  const cluster = randomClusterName();
  const coordinator = await Coordinator.start({
    cluster,
    nats: { servers: server.url },
    heartbeatMs: 200,
    missedHeartbeats: 3,
    sweepIntervalMs: 500,
    metrics: { port: null },
  });
  const client = await ActorSystem.start({ cluster, servers: server.url });
  // The sweep takes its entries from the coordinator's directory watch: it never lists (and reads
  // one by one) the whole directory, which holds every actor the cluster ever ran.
  const listed = jest.spyOn(coordinator.system.directory, 'list');
  let only: TestProcess | undefined;
  try {
    only = await startHost(server.url, cluster, 'only');
    await waitFor(() => coordinator.registry?.isAlive('only'), { timeoutMs: 10_000 });
    const incarnation = coordinator.registry!.get('only')!.info.incarnation;
    const ref = client.refOf({ kind: 'worker', id: 'w1' });
    const entriesOf = async () =>
      (
        (await client.states.read({ kind: 'worker', id: 'w1' }))?.record.data as
          { entries: string[] } | undefined
      )?.entries ?? [];
    await ref.post('append', { entry: 'a' });
    await waitFor(async () => (await entriesOf()).length === 1, { timeoutMs: 10_000 });

    // The host stops mid-turn and is declared dead; no other host can take its actor, so the
    // recovery sweep finds the pending post and cannot place it.
    // A turn long enough that the host, once resumed, is fenced long before it could commit; its
    // replay is quick.
    await ref.post('slowOnce', { entry: 'slow', ms: 30_000 });
    await only.waitForLine((l) => l === 'TURN w1 slow');
    only.child.kill('SIGSTOP');
    await waitFor(() => coordinator.registry!.get('only')!.state === 'DEAD', { timeoutMs: 10_000 });
    await waitFor(
      async () => {
        const { entry } = await client.directory.get({ kind: 'worker', id: 'w1' });
        return entry.state === 'SLEEPING' && entry.recover === true;
      },
      { timeoutMs: 10_000, message: 'the actor of the dead host was put to sleep for recovery' },
    );

    // The host comes back: it is fenced, registers as a new incarnation, and the sweep places
    // the actor on it again; the unfinished turn is replayed there.
    only.child.kill('SIGCONT');
    await waitFor(
      () => {
        const r = coordinator.registry!.get('only');
        return r?.state === 'ALIVE' && r.info.incarnation !== incarnation;
      },
      { timeoutMs: 15_000, message: 'the host re-registered as a new incarnation' },
    );
    await waitFor(async () => (await entriesOf()).length === 2, {
      timeoutMs: 15_000,
      message: 'the pending post was processed after the host came back',
    });
    expect(await entriesOf()).toEqual(['a', 'slow']);
    const { entry } = await client.directory.get({ kind: 'worker', id: 'w1' });
    expect(entry).toMatchObject({ hostId: 'only', epoch: 2 });
    expect(entry.recover).toBeUndefined();
    expect(listed).not.toHaveBeenCalled();
  } finally {
    listed.mockRestore();
    only?.child.kill('SIGCONT');
    await client.shutdown();
    await only?.kill('SIGKILL');
    await coordinator.stop();
  }
});

test("time the coordinator's own connection was down is not held against hosts", async () => {
  const cluster = randomClusterName();
  // The coordinator reaches NATS through a proxy the test cuts for far longer than the death
  // window (600 ms) but well within its leader lease (30 s here, so that a slow reconnect on a
  // loaded machine cannot make it step down); the host's connection stays up.
  const proxy = await startTcpProxy({ target: { port: server.port } });
  const coordinator = await Coordinator.start({
    cluster,
    nats: { servers: proxy.url },
    heartbeatMs: 200,
    missedHeartbeats: 3,
    sweepIntervalMs: 500,
    leaseMs: 30_000,
    metrics: { port: null },
  });
  const host = await ActorSystem.start({
    cluster,
    servers: server.url,
    hostId: 'h1',
    hosting: [Tally],
    placement: 'none',
  });
  try {
    await waitFor(() => coordinator.registry?.isAlive('h1'), { timeoutMs: 10_000 });
    const incarnation = coordinator.registry!.get('h1')!.info.incarnation;
    const registry = coordinator.registry!;
    proxy.cut();
    // The registry hears nothing for two death windows...
    await waitFor(
      () => Date.now() - registry.get('h1')!.lastHeartbeatUnixMs > 2 * registry.deadAfterMs,
      { timeoutMs: 5_000 },
    );
    expect(registry.get('h1')!.state).toBe('ALIVE');
    const restoredAt = Date.now();
    proxy.restore();
    // ...and once it is back, hears the host again without having declared it dead.
    await waitFor(() => registry.get('h1')!.lastHeartbeatUnixMs > restoredAt, {
      timeoutMs: 10_000,
      message: 'a heartbeat reached the coordinator after its reconnect',
    });
    const record = registry.get('h1')!;
    expect(record.state).toBe('ALIVE');
    expect(record.info.incarnation).toBe(incarnation);
  } finally {
    proxy.restore(); // a coordinator that cannot reach NATS cannot stop cleanly
    await host.shutdown({ graceMs: 0 });
    await coordinator.stop();
    await proxy.stop();
  }
});

test('a host cut off until it was declared dead is fenced when it registers again, not revived', async () => {
  // A partition, unlike a pause: the host's heartbeats fail while it is cut off, so it comes
  // back by registering, not by a heartbeat that would be answered `fenced`. Reviving its old
  // incarnation left its activations live beside the ones that replaced them — holding sandbox
  // slots the coordinator counted as free (chaos seeds 1008–1010: "no free sandbox slot").
  const cluster = randomClusterName();
  const coordinator = await Coordinator.start({
    cluster,
    nats: { servers: server.url },
    heartbeatMs: 200,
    missedHeartbeats: 3,
    sweepIntervalMs: 500,
    metrics: { port: null },
  });
  const { proxy, hostNc, hostEvents, host } = await proxiedHost(cluster, 'cut');
  const client = await ActorSystem.start({ cluster, servers: server.url });
  try {
    await waitFor(() => coordinator.registry?.isAlive('cut'), { timeoutMs: 10_000 });
    const incarnation = coordinator.registry!.get('cut')!.info.incarnation;
    await client.refOf({ kind: 'tally', id: 't1' }).ask('add', { entry: 'a' });
    expect(host.activationCount).toBe(1);

    proxy.cut();
    await waitFor(() => coordinator.registry!.get('cut')!.state === 'DEAD', {
      timeoutMs: 10_000,
      message: 'the cut-off host declared dead',
    });
    proxy.restore();
    await waitFor(() => hostEvents.includes('reconnect'), { timeoutMs: 10_000 });
    await waitFor(
      () => {
        const r = coordinator.registry!.get('cut');
        return r?.state === 'ALIVE' && r.info.incarnation !== incarnation;
      },
      { timeoutMs: 15_000, message: 'the host registered again as a new incarnation' },
    );
    // Its old activation was fenced, so its slot is free and the actor is placed afresh.
    expect(host.activationCount).toBe(0);
    await client.refOf({ kind: 'tally', id: 't1' }).ask('add', { entry: 'b' });
    const { entry } = await client.directory.get({ kind: 'tally', id: 't1' });
    expect(entry).toMatchObject({ hostId: 'cut', epoch: 2 });
  } finally {
    await client.shutdown();
    await host.shutdown({ graceMs: 0 });
    await hostNc.close();
    await proxy.stop();
    await coordinator.stop();
  }
});

test('an actor whose activations find its store unavailable is never STOPPED: the sweep places it again', async () => {
  // A stream electing a new leader after a server loss fails activations with STORE_UNAVAILABLE
  // for seconds. Before, three such failures marked the actor STOPPED and its posts waited for a
  // manual restart; now it stays asleep with `recover` set and the recovery sweep retries.
  const cluster = randomClusterName();
  const coordinator = await Coordinator.start({
    cluster,
    nats: { servers: server.url },
    heartbeatMs: 250,
    missedHeartbeats: 8,
    sweepIntervalMs: 300,
    metrics: { port: null },
  });
  let failuresLeft = 5; // more than the placer's three attempts per activation
  const Flaky = defineActor({
    kind: 'flaky',
    state: z.object({ entries: z.array(z.string()) }),
    initialState: () => ({ entries: [] as string[] }),
    messages: { add: z.object({ entry: z.string() }) },
    handlers: {
      add: (_ctx, msg, state) => ({ state: { entries: [...state.entries, msg.entry] } }),
    },
    onActivate: () => {
      if (failuresLeft-- > 0) throw new StoreUnavailableError(new Error('stream has no leader'));
    },
  });
  const host = await ActorSystem.start({
    cluster,
    servers: server.url,
    hostId: 'h1',
    hosting: [Flaky],
    placement: 'none',
  });
  const client = await ActorSystem.start({ cluster, servers: server.url });
  try {
    await waitFor(() => coordinator.registry?.isAlive('h1'), { timeoutMs: 10_000 });
    const addr = { kind: 'flaky', id: 'f1' };
    await client.refOf(addr).post('add', { entry: 'a' });
    const states: string[] = [];
    await waitFor(
      async () => {
        const { entry } = await client.directory.get(addr);
        if (states[states.length - 1] !== entry.state) states.push(entry.state);
        const stored = (await client.states.read(addr))?.record.data as
          { entries: string[] } | undefined;
        return stored?.entries.length === 1;
      },
      { timeoutMs: 20_000, message: 'the post is processed once the store answers again' },
    );
    expect(failuresLeft).toBeLessThan(0);
    expect(states).not.toContain('STOPPED');
  } finally {
    await client.shutdown();
    await host.shutdown({ graceMs: 0 });
    await coordinator.stop();
  }
});
