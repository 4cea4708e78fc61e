import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { connect } from '@nats-io/transport-node';
import { decodeErrorHeaders, hostSubject } from '@troupe/proto';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { z } from 'zod';
import { defineActor } from '../../src/actor-definition';
import { ActorSystem } from '../../src/actor-system';
import { Counter } from '../fixtures/counter';
import { moveActivation } from '../fixtures/move-activation';

let server: NatsServerHandle;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});

test('two hosts racing to activate the same addresses give exactly one activation each', async () => {
  const cluster = randomClusterName();
  const a = await ActorSystem.start({
    cluster,
    servers: server.url,
    hostId: 'host-a',
    hosting: [Counter],
  });
  const b = await ActorSystem.start({
    cluster,
    servers: server.url,
    hostId: 'host-b',
    hosting: [Counter],
  });
  try {
    const ids = Array.from({ length: 10 }, (_, i) => `race-${i}`);
    const asks = ids.flatMap((id) => [
      ...Array.from({ length: 5 }, () => a.ref(Counter, id).ask('add', { by: 1 })),
      ...Array.from({ length: 5 }, () => b.ref(Counter, id).ask('add', { by: 1 })),
    ]);
    await Promise.all(asks);
    expect(a.activationsStarted + b.activationsStarted).toBe(ids.length);
    for (const id of ids) expect(await a.ref(Counter, id).ask('get', {})).toBe(10);
  } finally {
    await a.shutdown({ graceMs: 500 });
    await b.shutdown({ graceMs: 500 });
  }
});

test('two hosts claiming the same SLEEPING revision: one activation; the loser answers raced and keeps nothing', async () => {
  const cluster = randomClusterName();
  const start = (hostId: string) =>
    ActorSystem.start({
      cluster,
      servers: server.url,
      hostId,
      hosting: [Counter],
      placement: 'none',
    });
  const a = await start('claim-a');
  const b = await start('claim-b');
  const nc = await connect({ servers: server.url });
  try {
    const addr = { kind: 'counter', id: 'claimed' };
    // What a placer sends in the one-step form: the entry is absent (revision 0), epoch 1.
    const body = JSON.stringify({ addr, epoch: 1, claimRevision: 0 });
    const replies = await Promise.all(
      ['claim-a', 'claim-b'].map((h) =>
        nc.request(hostSubject(cluster, h, 'activate'), body, { timeout: 10_000 }),
      ),
    );
    const errors = replies.map((r) => decodeErrorHeaders(r.headers));
    expect(errors.filter((e) => e === undefined)).toHaveLength(1);
    const lost = errors.find((e) => e !== undefined)!;
    expect(lost.code).toBe('UNAVAILABLE');
    expect(lost.details?.['raced']).toBe(true);
    const winner = errors[0] === undefined ? a : b;
    const loser = winner === a ? b : a;
    expect(winner.activationCount).toBe(1);
    expect(loser.activationCount).toBe(0);
    const { entry } = await a.directory.get(addr);
    expect(entry).toMatchObject({ state: 'IDLE', hostId: winner.hostId, epoch: 1 });
    // The loser never subscribed: every ask runs once, on the winner.
    const ref = a.ref(Counter, 'claimed');
    for (let i = 1; i <= 20; i++) expect(await ref.ask('add', { by: 1 })).toBe(i);
    // A stale revision (the entry is IDLE now) is refused the same way.
    const stale = await nc.request(hostSubject(cluster, loser.hostId, 'activate'), body, {
      timeout: 10_000,
    });
    expect(decodeErrorHeaders(stale.headers)?.details?.['raced']).toBe(true);
    expect(loser.activationCount).toBe(0);
  } finally {
    await nc.close();
    await a.shutdown({ graceMs: 500 });
    await b.shutdown({ graceMs: 500 });
  }
});

test("a stale (partitioned) host's write is rejected and it stops itself", async () => {
  const cluster = randomClusterName();
  const a = await ActorSystem.start({
    cluster,
    servers: server.url,
    hostId: 'old',
    hosting: [Counter],
  });
  const b = await ActorSystem.start({
    cluster,
    servers: server.url,
    hostId: 'new',
    hosting: [Counter],
    placement: 'none',
  });
  const nc = await connect({ servers: server.url });
  try {
    const ref = a.ref(Counter, 'fenced');
    expect(await ref.ask('add', { by: 1 })).toBe(1);
    expect(a.activationCount).toBe(1);
    // The coordinator declares 'old' dead and moves the actor to 'new' at epoch 2 while the old
    // activation is still subscribed (a partition): both receive the next tell.
    expect(await moveActivation(a, nc, cluster, ref.address, 'new')).toBe(2);
    ref.tell('add', { by: 5 });
    await waitFor(() => a.activationCount === 0, {
      timeoutMs: 5_000,
      message: 'old activation not fenced',
    });
    const stored = await a.states.read(ref.address);
    expect(stored!.record.epoch).toBe(2);
    expect((stored!.record.data as { count: number }).count).toBe(6);
  } finally {
    await nc.close();
    await a.shutdown({ graceMs: 500 });
    await b.shutdown({ graceMs: 500 });
  }
});

const Journal = defineActor({
  kind: 'journal',
  state: z.object({ entries: z.array(z.string()) }),
  initialState: () => ({ entries: [] as string[] }),
  messages: { append: z.object({ entry: z.string() }) },
  handlers: {
    append: (_ctx, msg, state) => ({ state: { entries: [...state.entries, msg.entry] } }),
  },
});

function startHostProcess(
  cluster: string,
  hostId: string,
  fixture = 'host-process.js',
): { child: ChildProcess; lines: string[] } {
  const child = spawn(
    process.execPath,
    [path.join(__dirname, '../fixtures', fixture), server.url, cluster, hostId],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const lines: string[] = [];
  let buf = '';
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split('\n');
    buf = parts.pop()!;
    lines.push(...parts);
  });
  child.stderr.on('data', (d: Buffer) => lines.push(`ERR ${d.toString()}`));
  return { child, lines };
}

test('kill -9 of the host mid-turn: the message is applied exactly once after re-activation', async () => {
  const cluster = randomClusterName();
  const { child, lines } = startHostProcess(cluster, 'doomed');
  let survivor: ActorSystem | undefined;
  try {
    await waitFor(() => lines.includes('READY'), {
      timeoutMs: 15_000,
      message: `host did not start: ${lines.join('\n')}`,
    });
    const client = await ActorSystem.start({ cluster, servers: server.url });
    try {
      await client.ref(Journal, 'j1').post('append', { entry: 'first' }, { dedupeId: 'e-1' });
      await waitFor(() => lines.some((l) => l.startsWith('TURN first')), { timeoutMs: 10_000 });
    } finally {
      await client.shutdown();
    }
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    // A new host comes up (its local placer sweeps, finds the dead host's actor with a pending
    // post, and re-activates it here).
    survivor = await ActorSystem.start({
      cluster,
      servers: server.url,
      hostId: 'survivor',
      hosting: [Journal],
      sweepIntervalMs: 200,
    });
    const addr = { kind: 'journal', id: 'j1' };
    await waitFor(async () => ((await survivor!.states.read(addr))?.record.cursor ?? 0) > 0, {
      timeoutMs: 15_000,
      message: 'message was not re-delivered',
    });
    const stored = await survivor.states.read(addr);
    expect(stored!.record.data).toEqual({ entries: ['first'] });
    expect(stored!.record.epoch).toBe(2);
    // And it keeps working; the message is not applied a second time.
    await survivor.ref(Journal, 'j1').post('append', { entry: 'second' });
    await waitFor(
      async () =>
        ((await survivor!.states.read(addr))?.record.data as { entries: string[] }).entries
          .length === 2,
      {
        timeoutMs: 10_000,
      },
    );
    expect((await survivor.states.read(addr))!.record.data).toEqual({
      entries: ['first', 'second'],
    });
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await survivor?.shutdown({ graceMs: 500 });
  }
});

test('posts sent while no placer runs are delivered once a host with a placer starts', async () => {
  const cluster = randomClusterName();
  const client = await ActorSystem.start({ cluster, servers: server.url });
  await client.ref(Journal, 'late').post('append', { entry: 'a' });
  await client.ref(Journal, 'late').post('append', { entry: 'b' });
  await client.shutdown();
  const host = await ActorSystem.start({ cluster, servers: server.url, hosting: [Journal] });
  try {
    const addr = { kind: 'journal', id: 'late' };
    await waitFor(
      async () =>
        ((await host.states.read(addr))?.record.data as { entries?: string[] } | undefined)?.entries
          ?.length === 2,
      {
        timeoutMs: 10_000,
      },
    );
    expect((await host.states.read(addr))!.record.data).toEqual({ entries: ['a', 'b'] });
  } finally {
    await host.shutdown({ graceMs: 500 });
  }
});

test('two host processes racing to activate the same addresses: exactly one activation each', async () => {
  const cluster = randomClusterName();
  const a = startHostProcess(cluster, 'proc-a', 'race-host.js');
  const b = startHostProcess(cluster, 'proc-b', 'race-host.js');
  const client = await ActorSystem.start({ cluster, servers: server.url });
  try {
    for (const h of [a, b]) {
      await waitFor(() => h.lines.includes('READY'), {
        timeoutMs: 15_000,
        message: h.lines.join('\n'),
      });
    }
    const ids = Array.from({ length: 12 }, (_, i) => `r${i}`);
    // Every ask goes through coord.sched.activate, answered by either process's placer (a queue
    // group), so both race for every address.
    const asks = ids.flatMap((id) =>
      Array.from({ length: 6 }, () => client.refOf({ kind: 'tally', id }).ask('bump', {})),
    );
    await Promise.all(asks);
    const activated = [...a.lines, ...b.lines].filter((l) => l.startsWith('ACTIVATED '));
    expect(activated.sort()).toEqual(ids.map((id) => `ACTIVATED ${id}`).sort());
    for (const id of ids) {
      const s = await client.states.read({ kind: 'tally', id });
      expect(s!.record.data).toEqual({ n: 6 });
    }
  } finally {
    await client.shutdown();
    for (const h of [a, b]) if (h.child.exitCode === null) h.child.kill('SIGKILL');
  }
});
