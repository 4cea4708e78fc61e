import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { deadLetterStreamName, hostSubject, kvBucketName } from '@troupe/proto';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { z } from 'zod';
import { defineActor } from '../../src/actor-definition';
import { ActorSystem } from '../../src/actor-system';

// Posts waiting in an actor's inbox are handled in order and committed together (one state
// compare-and-set per batch). These tests make the batch deterministic by posting while no host
// runs, so the activation finds every message already in the inbox.

let server: NatsServerHandle;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});

/** Handler calls per posted value, and a gate a test can hold one value's turn at. */
const calls = new Map<number, number>();
let failValue: number | undefined;
let holdValue: number | undefined;
let held: { release: () => void } | undefined;
const seenByFailing: number[][] = [];

const Ledger = defineActor({
  kind: 'ledger',
  state: z.object({ log: z.array(z.number().int()) }),
  initialState: () => ({ log: [] as number[] }),
  messages: { add: z.object({ v: z.number().int() }), get: z.object({}) },
  handlers: {
    add: async (_ctx, msg, state) => {
      calls.set(msg.v, (calls.get(msg.v) ?? 0) + 1);
      if (msg.v === failValue) {
        seenByFailing.push([...state.log]);
        throw new Error(`refusing ${msg.v}`);
      }
      if (msg.v === holdValue) {
        holdValue = undefined; // hold the first run only; a replay goes through
        await new Promise<void>((release) => (held = { release }));
      }
      return { state: { log: [...state.log, msg.v] } };
    },
    get: (_ctx, _msg, state) => ({ reply: state.log }),
  },
  maxAttempts: 2,
});

beforeEach(() => {
  calls.clear();
  failValue = undefined;
  holdValue = undefined;
  held = undefined;
  seenByFailing.length = 0;
});

/** Posts `values` to ledger `id` from a process that hosts nothing and runs no placer. */
async function postWhileAsleep(cluster: string, id: string, values: number[]): Promise<number[]> {
  const client = await ActorSystem.start({ cluster, servers: server.url });
  try {
    const ref = client.ref(Ledger, id);
    const seqs: number[] = [];
    for (const v of values) seqs.push((await ref.post('add', { v })).seq);
    return seqs;
  } finally {
    await client.shutdown();
  }
}

/** Writes the state bucket has taken (every actor's commits and claims) in this cluster. */
async function stateWrites(system: ActorSystem): Promise<number> {
  const jsm = await jetstreamManager(system.nc);
  return (await jsm.streams.info(`KV_${kvBucketName(system.cluster, 'state')}`)).state.last_seq;
}

test('posts waiting in the inbox are handled in order under one commit', async () => {
  const cluster = randomClusterName();
  const values = Array.from({ length: 20 }, (_, i) => i + 1);
  const seqs = await postWhileAsleep(cluster, 'l1', values);
  const host = await ActorSystem.start({ cluster, servers: server.url, hosting: [Ledger] });
  try {
    const addr = { kind: 'ledger', id: 'l1' };
    await waitFor(async () => (await host.states.read(addr))?.record.cursor === seqs.at(-1), {
      timeoutMs: 10_000,
      message: 'posts were not all committed',
    });
    expect((await host.states.read(addr))!.record.data).toEqual({ log: values });
    // One message at a time this was 20 writes.
    expect(await stateWrites(host)).toBe(1);
    expect([...calls.values()].every((n) => n === 1)).toBe(true);
  } finally {
    await host.shutdown({ graceMs: 500 });
  }
});

test('a handler that throws in the middle of a batch fails alone: the messages before it stay committed, only it is retried', async () => {
  const cluster = randomClusterName();
  failValue = 3;
  const seqs = await postWhileAsleep(cluster, 'l2', [1, 2, 3, 4, 5]);
  const host = await ActorSystem.start({ cluster, servers: server.url, hosting: [Ledger] });
  try {
    const addr = { kind: 'ledger', id: 'l2' };
    await waitFor(async () => (await host.states.read(addr))?.record.cursor === seqs.at(-1), {
      timeoutMs: 15_000,
      message: 'posts were not all committed',
    });
    expect((await host.states.read(addr))!.record.data).toEqual({ log: [1, 2, 4, 5] });
    // Both attempts at 3 saw 1 and 2 applied; 1 and 2 ran once (not replayed with the retry).
    expect(seenByFailing).toEqual([
      [1, 2],
      [1, 2],
    ]);
    expect(Object.fromEntries(calls)).toEqual({ 1: 1, 2: 1, 3: 2, 4: 1, 5: 1 });
    const jsm = await jetstreamManager(host.nc);
    await waitFor(
      async () => (await jsm.streams.info(deadLetterStreamName(cluster))).state.messages === 1,
      { timeoutMs: 5_000 },
    );
    const dead = await jsm.streams.getMessage(deadLetterStreamName(cluster), { seq: 1 });
    expect(Number(dead!.header.get('Troupe-Original-Seq'))).toBe(seqs[2]);
    // 1-2 committed before 3 failed; 3 dead-lettered with the cursor; 4-5 in one more commit.
    expect(await stateWrites(host)).toBe(3);
  } finally {
    await host.shutdown({ graceMs: 500 });
  }
});

test('an activation fenced in the middle of a batch commits nothing of it; the new one applies every message once', async () => {
  const cluster = randomClusterName();
  const addr = { kind: 'ledger', id: 'l3' };
  // A committed record first, so that the next activations claim it (a claim is a write that
  // fences the activation before it).
  const first = await ActorSystem.start({ cluster, servers: server.url, hosting: [Ledger] });
  expect(await first.ref(Ledger, 'l3').ask('add', { v: 100 })).toBeNull();
  await first.shutdown({ graceMs: 500 });

  holdValue = 3;
  const seqs = await postWhileAsleep(cluster, 'l3', [1, 2, 3, 4, 5]);
  const old = await ActorSystem.start({
    cluster,
    servers: server.url,
    hostId: 'old',
    hosting: [Ledger],
  });
  const fresh = await ActorSystem.start({
    cluster,
    servers: server.url,
    hostId: 'new',
    hosting: [Ledger],
    placement: 'none',
  });
  const nc = await connect({ servers: server.url });
  try {
    // The old activation has applied 1 and 2 in memory and holds the turn of 3: none committed.
    await waitFor(() => held !== undefined, { timeoutMs: 10_000, message: '3 never ran' });
    const before = await old.states.read(addr);
    expect(before!.record.cursor).toBe(0);
    expect(before!.record.data).toEqual({ log: [100] });
    // Move the actor to 'new' at the next epoch while the old activation is mid-batch.
    const { entry, revision } = await old.directory.get(addr);
    await old.directory.compareAndSet(addr, revision, {
      state: 'ACTIVATING',
      hostId: 'new',
      epoch: entry.epoch + 1,
      updatedAtMs: Date.now(),
    });
    await nc.request(
      hostSubject(cluster, 'new', 'activate'),
      JSON.stringify({ addr, epoch: entry.epoch + 1 }),
      { timeout: 5_000 },
    );
    await waitFor(async () => (await fresh.states.read(addr))?.record.cursor === seqs.at(-1), {
      timeoutMs: 10_000,
      message: 'the new activation did not apply the batch',
    });
    // Let the old turn finish: its batch commit is refused and the old activation stops.
    held!.release();
    await waitFor(() => old.activationCount === 0, {
      timeoutMs: 5_000,
      message: 'old activation not fenced',
    });
    const stored = await fresh.states.read(addr);
    expect(stored!.record.epoch).toBe(entry.epoch + 1);
    expect(stored!.record.data).toEqual({ log: [100, 1, 2, 3, 4, 5] });
    expect(await fresh.ref(Ledger, 'l3').ask('get', {})).toEqual([100, 1, 2, 3, 4, 5]);
  } finally {
    await nc.close();
    await old.shutdown({ graceMs: 500 });
    await fresh.shutdown({ graceMs: 500 });
  }
});
