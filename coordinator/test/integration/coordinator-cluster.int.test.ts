import { ActorSystem, defineActor } from '@troupe/actors';
import { z } from 'zod';
import { startNatsServer, waitFor, type NatsServerHandle } from '@troupe/testkit';
import { TestCluster, type TestProcess } from '@troupe/test-cluster';
import { startHost } from './helpers';

let server: NatsServerHandle;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});

const Echo = defineActor({
  kind: 'echo',
  state: z.object({}),
  initialState: () => ({}),
  messages: { epoch: z.object({}) },
  handlers: { epoch: (ctx) => ({ reply: ctx.epoch }) },
  idleTimeoutMs: 600_000,
});

interface WorkerState {
  entries: string[];
  hosts: string[];
}

async function stateOf(system: ActorSystem, id: string): Promise<WorkerState | undefined> {
  return (await system.states.read({ kind: 'worker', id }))?.record.data as WorkerState | undefined;
}

test('kill -9 of a host with active actors: they are re-activated elsewhere and no post is lost', async () => {
  const tc = await TestCluster.start({ nats: server });
  const { cluster, coordinator } = tc;
  const hosts: TestProcess[] = [];
  const client = await ActorSystem.start({ cluster, servers: server.url });
  try {
    for (const id of ['h1', 'h2', 'h3']) hosts.push(await startHost(server.url, cluster, id));
    await waitFor(
      () =>
        coordinator.registry?.schedulable().filter((h) => h.info.kinds.includes('worker'))
          .length === 3,
      { timeoutMs: 10_000 },
    );
    const ids = Array.from({ length: 9 }, (_, i) => `w${i}`);
    const where = new Map<string, string>();
    for (const id of ids)
      where.set(id, (await client.refOf({ kind: 'worker', id }).ask('where', {})) as string);
    // Least-loaded placement spreads them evenly.
    const perHost = [...where.values()].reduce<Record<string, number>>(
      (acc, h) => ({ ...acc, [h]: (acc[h] ?? 0) + 1 }),
      {},
    );
    expect(perHost).toEqual({ h1: 3, h2: 3, h3: 3 });

    await hosts[0]!.kill('SIGKILL');
    for (const id of ids)
      await client.refOf({ kind: 'worker', id }).post('append', { entry: 'after-crash' });
    for (const id of ids) {
      await waitFor(async () => (await stateOf(client, id))?.entries.length === 1, {
        timeoutMs: 15_000,
        message: `post to ${id} not processed`,
      });
    }
    expect(coordinator.registry!.get('h1')!.state).toBe('DEAD');
    for (const id of ids) {
      const s = (await stateOf(client, id))!;
      expect(s.entries).toEqual(['after-crash']);
      expect(s.hosts[0]).not.toBe('h1');
    }
  } finally {
    await client.shutdown();
    for (const h of hosts) await h.kill('SIGKILL');
    await tc.stop();
  }
});

test('an ask that finds a sleeping actor is handed to the host the coordinator starts it on, and runs once', async () => {
  const tc = await TestCluster.start({ nats: server });
  const { cluster, coordinator } = tc;
  const client = await ActorSystem.start({ cluster, servers: server.url });
  let host: TestProcess | undefined;
  try {
    host = await startHost(server.url, cluster, 'h1');
    await waitFor(
      () => coordinator.registry?.schedulable().some((h) => h.info.kinds.includes('worker')),
      { timeoutMs: 10_000 },
    );
    const addr = { kind: 'worker', id: 'handed-over' };
    const envelope = { t: 'append', m: { entry: 'once' }, d: Date.now() + 20_000 };
    // The placer starts the activation on h1 with the ask; h1 answers the asker itself.
    const answer = await client.transport.activateWithAsk(addr, envelope, { timeoutMs: 20_000 });
    expect(answer).toBeDefined();
    expect(answer!.headers?.get('Troupe-Answer')).toBe('1');
    expect((await stateOf(client, 'handed-over'))?.entries).toEqual(['once']);
    // Live now: the placer answers where it is and does not run the ask.
    const again = await client.transport.activateWithAsk(addr, envelope, { timeoutMs: 20_000 });
    expect(again).toBeUndefined();
    expect((await stateOf(client, 'handed-over'))?.entries).toEqual(['once']);
    // Through a ref: each ask to a fresh actor runs exactly once.
    const ids = Array.from({ length: 20 }, (_, i) => `fresh-${i}`);
    await Promise.all(
      ids.map((id) => client.refOf({ kind: 'worker', id }).ask('append', { entry: id })),
    );
    for (const id of ids) expect((await stateOf(client, id))?.entries).toEqual([id]);
    expect(await client.refOf(addr).ask('where', {})).toBe('h1');
  } finally {
    await client.shutdown();
    await host?.kill('SIGKILL');
    await tc.stop();
  }
});

test('a partitioned host cannot commit after it was declared dead; it is fenced when it comes back', async () => {
  const tc = await TestCluster.start({ nats: server });
  const { cluster, coordinator } = tc;
  const client = await ActorSystem.start({ cluster, servers: server.url });
  let old: TestProcess | undefined;
  let other: TestProcess | undefined;
  try {
    old = await startHost(server.url, cluster, 'old');
    await waitFor(() => coordinator.registry?.isAlive('old'), { timeoutMs: 10_000 });
    const ref = client.refOf({ kind: 'worker', id: 'p1' });
    expect(await ref.ask('where', {})).toBe('old');
    other = await startHost(server.url, cluster, 'other');
    await waitFor(() => coordinator.registry?.isAlive('other'), { timeoutMs: 10_000 });
    const oldIncarnation = coordinator.registry!.get('old')!.info.incarnation;

    await ref.post('slowAppend', { entry: 'slow', ms: 1_500 });
    await old.waitForLine((l) => l === 'TURN p1 slow');
    old.child.kill('SIGSTOP'); // partition: the process is alive but silent
    await waitFor(() => coordinator.registry!.get('old')!.state === 'DEAD', { timeoutMs: 10_000 });
    await ref.post('append', { entry: 'new' });
    // The unfinished slow turn is replayed on 'other', then the new post.
    await waitFor(async () => (await stateOf(client, 'p1'))?.entries.length === 2, {
      timeoutMs: 15_000,
    });
    old.child.kill('SIGCONT'); // the partition heals: the old turn finishes and tries to commit
    await waitFor(
      () => {
        const r = coordinator.registry!.get('old');
        return r?.state === 'ALIVE' && r.info.incarnation !== oldIncarnation;
      },
      { timeoutMs: 15_000, message: 'old host was not fenced and re-registered' },
    );
    const s = (await stateOf(client, 'p1'))!;
    expect(s.entries).toEqual(['slow', 'new']);
    expect(s.hosts).toEqual(['other', 'other']);
    expect((await client.states.read({ kind: 'worker', id: 'p1' }))!.record.epoch).toBe(2);
  } finally {
    old?.child.kill('SIGCONT');
    await client.shutdown();
    await old?.kill('SIGKILL');
    await other?.kill('SIGKILL');
    await tc.stop();
  }
});

test('a stall of the process hosting the coordinator and a host is not held against the host', async () => {
  // A 600 ms death window (heartbeats every 200 ms, three missed), which the stall below exceeds.
  const tc = await TestCluster.start({
    nats: server,
    coordinator: { config: { heartbeatMs: 200, missedHeartbeats: 3 } },
  });
  const { cluster, coordinator } = tc;
  const client = await ActorSystem.start({ cluster, servers: server.url });
  // The host shares this process (as in `troupe dev`): its heartbeat timer stalls with the
  // coordinator's sweep, and both are overdue when the process runs again.
  const host = await ActorSystem.start({
    cluster,
    servers: server.url,
    hostId: 'h1',
    hosting: [Echo],
    placement: 'none',
  });
  try {
    await waitFor(() => coordinator.registry?.isAlive('h1'), { timeoutMs: 10_000 });
    const incarnation = coordinator.registry!.get('h1')!.info.incarnation;
    const ref = client.refOf({ kind: 'echo', id: 's1' });
    const epoch = await ref.ask('epoch', {});
    await waitFor(() => coordinator.registry!.get('h1')!.load.echo === 1, { timeoutMs: 10_000 });

    // Block the process for over three times the 600 ms death window, as a long GC pause or a
    // busy event loop would.
    await new Promise<void>((resolve) =>
      setTimeout(() => {
        const stallUntil = performance.now() + 2_000;
        while (performance.now() < stallUntil) {
          // busy: nothing else in this process runs
        }
        resolve();
      }, 0),
    );
    const beatAfterStall = coordinator.registry!.get('h1')!.lastHeartbeatUnixMs;
    await waitFor(
      () => coordinator.registry!.get('h1')!.lastHeartbeatUnixMs > beatAfterStall + 300,
      { timeoutMs: 10_000, message: 'no heartbeat after the stall' },
    );
    const record = coordinator.registry!.get('h1')!;
    expect(record.state).toBe('ALIVE');
    expect(record.info.incarnation).toBe(incarnation);
    // Its activation was neither fenced nor moved: the same epoch answers.
    expect(await ref.ask('epoch', {})).toBe(epoch);
  } finally {
    await host.shutdown();
    await client.shutdown();
    await tc.stop();
  }
});
