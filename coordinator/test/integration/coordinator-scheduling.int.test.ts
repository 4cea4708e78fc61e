import { ActorSystem, defineActor } from '@troupe/actors';
import { type TroupeError } from '@troupe/proto';
import { TestCluster } from '@troupe/test-cluster';
import { startNatsServer, waitFor, type NatsServerHandle } from '@troupe/testkit';
import { z } from 'zod';
import { remindAt } from '../../src/reminders';

let server: NatsServerHandle;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});

const admitted: string[] = [];
/** Resolvers of the `hold` turns in progress. */
const releases: (() => void)[] = [];
const releaseAll = () => releases.splice(0).forEach((r) => r());

const Task = defineActor({
  kind: 'task',
  state: z.object({ runs: z.number().int() }),
  initialState: () => ({ runs: 0 }),
  messages: { run: z.object({}), hold: z.object({}), note: z.object({ text: z.string() }) },
  handlers: {
    run: async (ctx, _msg, state) => {
      admitted.push(ctx.self.id);
      // Hold the slot briefly so requests pile up in the fair queue.
      await new Promise((r) => setTimeout(r, 15));
      return { state: { runs: state.runs + 1 } };
    },
    hold: async () => {
      await new Promise<void>((r) => releases.push(r));
      return { reply: 'released' };
    },
    note: () => ({ reply: 'ok' }),
  },
  idleTimeoutMs: 1,
  trackRunning: true,
});

test('two jobs weighted 1:3 competing for 4 slots get their share within ±10 %', async () => {
  const weights: Record<string, number> = { 'job-a': 1, 'job-b': 3 };
  const tc = await TestCluster.start({
    nats: server,
    coordinator: { deps: { jobPolicy: (jobId) => ({ weight: weights[jobId] ?? 1, priority: 0 }) } },
  });
  const { cluster, coordinator } = tc;
  const host = await ActorSystem.start({
    cluster,
    servers: server.url,
    hostId: 'h1',
    hosting: [Task],
    placement: 'none',
    slots: { task: 4 },
  });
  const client = await ActorSystem.start({ cluster, servers: server.url });
  try {
    await waitFor(() => coordinator.registry?.isAlive('h1'), { timeoutMs: 10_000 });
    admitted.length = 0;
    // The 4 slots are held while both jobs' requests arrive, so that every admission is the fair
    // queue's choice among both backlogs (requests trickling in under load were admitted in
    // arrival order, 1:1, and pulled job-b's share under 2/3).
    const holds = [0, 1, 2, 3].map((i) =>
      client
        .ref(Task, `hold-${i}`)
        .withHints({ jobId: 'job-h' })
        .ask('hold', {}, { timeoutMs: 90_000 }),
    );
    await waitFor(() => releases.length === 4, { timeoutMs: 30_000, message: 'the slots held' });
    const n = 60;
    const asks = [];
    for (let i = 0; i < n; i++) {
      for (const job of ['job-a', 'job-b']) {
        const ref = client.ref(Task, `${job}-${i}`).withHints({ jobId: job });
        asks.push(ref.ask('run', {}, { timeoutMs: 90_000 }));
      }
    }
    await waitFor(() => coordinator.placement?.queueDepth()['task'] === 2 * n, {
      timeoutMs: 30_000,
      message: 'every request queued',
    });
    releaseAll();
    await Promise.all([...asks, ...holds]);
    // Look at the window where both jobs still had a backlog: the first 60 admissions (job-b,
    // at 3/4 of them, has 45 of its 60 then).
    const window = admitted.slice(0, 60);
    const bShare = window.filter((id) => id.startsWith('job-b')).length / window.length;
    expect(bShare).toBeGreaterThanOrEqual(0.675);
    expect(bShare).toBeLessThanOrEqual(0.825);
    expect(admitted).toHaveLength(2 * n);
    // Every placement was taken: a host that still counted a slot the coordinator had seen freed
    // refused the placement, and the request went to the back of the queue (13–25 refusals per
    // run under load, which pulled job-b's share to 2/3 in CI).
    expect(coordinator.placement?.placements).toBe(2 * n + 4);
  } finally {
    await client.shutdown();
    await host.shutdown({ graceMs: 500 });
    await tc.stop();
  }
});

test('a directed invocation of a RUNNING instance is refused with BUSY', async () => {
  const tc = await TestCluster.start({ nats: server });
  const { cluster, coordinator } = tc;
  const host = await ActorSystem.start({
    cluster,
    servers: server.url,
    hostId: 'h1',
    hosting: [Task],
    placement: 'none',
  });
  const client = await ActorSystem.start({ cluster, servers: server.url });
  try {
    await waitFor(() => coordinator.registry?.isAlive('h1'), { timeoutMs: 10_000 });
    const ref = client.ref(Task, 'busy-1');
    const held = ref.ask('hold', {}, { timeoutMs: 30_000 });
    await waitFor(async () => (await client.directory.get(ref.address)).entry.state === 'RUNNING', {
      timeoutMs: 10_000,
    });
    const err = (await ref
      .ask('note', { text: 'x' }, { requireIdle: true })
      .catch((e: unknown) => e)) as TroupeError;
    expect(err.code).toBe('BUSY');
    releaseAll();
    expect(await held).toBe('released');
    expect(await ref.ask('note', { text: 'y' }, { requireIdle: true })).toBe('ok');
  } finally {
    await client.shutdown();
    await host.shutdown({ graceMs: 500 });
    await tc.stop();
  }
});

test('reminders survive a coordinator restart and wake a sleeping actor', async () => {
  const tc = await TestCluster.start({
    nats: server,
    coordinator: { config: { leaseMs: 1_000, renewMs: 200 } },
  });
  const { cluster } = tc;
  let coordinator = tc.coordinator;
  const host = await ActorSystem.start({
    cluster,
    servers: server.url,
    hostId: 'h1',
    hosting: [Task],
    placement: 'none',
  });
  try {
    await waitFor(() => coordinator.isLeader, { timeoutMs: 10_000 });
    await remindAt(host.nc, cluster, { kind: 'task', id: 'rem-1' }, Date.now() + 1_500, 'run', {});
    coordinator = await tc.restartCoordinator(coordinator);
    const addr = { kind: 'task', id: 'rem-1' };
    await waitFor(
      async () =>
        ((await host.states.read(addr))?.record.data as { runs: number } | undefined)?.runs === 1,
      {
        timeoutMs: 15_000,
        message: 'reminder did not fire after the restart',
      },
    );
  } finally {
    await host.shutdown({ graceMs: 500 });
    await tc.stop();
  }
});
