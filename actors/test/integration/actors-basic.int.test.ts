import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import {
  deadLetterStreamName,
  deadLetterSubject,
  decodeErrorHeaders,
  isTimeout,
  type TroupeError,
} from '@troupe/proto';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { z } from 'zod';
import { defineActor } from '../../src/actor-definition';
import { type PostReceipt } from '../../src/actor-ref';
import { ActorSystem } from '../../src/actor-system';
import { Counter, Sleepy } from '../fixtures/counter';

let server: NatsServerHandle;
let system: ActorSystem;
let cluster: string;

beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});
beforeEach(async () => {
  cluster = randomClusterName();
  system = await ActorSystem.start({ cluster, servers: server.url, hosting: [Counter, Sleepy] });
});
afterEach(async () => {
  await system.shutdown({ graceMs: 1_000 });
});

test('ask activates a sleeping actor and gets a typed reply', async () => {
  const c = system.ref(Counter, 'c1');
  expect(system.activationCount).toBe(0);
  expect(await c.ask('add', { by: 2 })).toBe(2);
  expect(await c.ask('get', {})).toBe(2);
  expect(system.activationCount).toBe(1);
  const { entry } = await system.directory.get(c.address);
  expect(entry.state).toBe('IDLE');
  expect(entry.epoch).toBe(1);
});

test('posts from one sender are applied in order, and a re-posted dedupeId is dropped', async () => {
  const c = system.ref(Counter, 'ordered');
  const receipts: PostReceipt[] = [];
  for (let i = 1; i <= 30; i++)
    receipts.push(await c.post('add', { by: i }, { dedupeId: `m-${i}` }));
  const again = await c.post('add', { by: 7 }, { dedupeId: 'm-7' });
  expect(again.duplicate).toBe(true);
  expect(again.seq).toBe(receipts[6]!.seq);
  await waitFor(
    async () => (await system.states.read(c.address))?.record.cursor === receipts[29]!.seq,
    {
      timeoutMs: 10_000,
    },
  );
  const stored = await system.states.read(c.address);
  expect((stored!.record.data as { log: number[] }).log).toEqual(
    Array.from({ length: 30 }, (_, i) => i + 1),
  );
  expect(await c.ask('get', {})).toBe(465);
});

test('post wakes a sleeping actor without any ask', async () => {
  const c = system.ref(Counter, 'woken');
  const r = await c.post('add', { by: 5 });
  await waitFor(async () => (await system.states.read(c.address))?.record.cursor === r.seq, {
    timeoutMs: 10_000,
  });
  expect(system.activationCount).toBe(1);
});

test('bad payloads are rejected with INVALID_ARGUMENT naming the field; the host keeps serving', async () => {
  const c = system.ref(Counter, 'strict');
  await expect(c.untyped.ask('add', { by: 'two' })).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
    message: expect.stringContaining('add.by') as string,
  });
  await expect(c.untyped.ask('nope', {})).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  expect(await c.ask('add', { by: 1 })).toBe(1);
});

test('a message type named like an Object.prototype member is an unknown type, not a crash', async () => {
  // Found by the fuzzer: `toString` reached the schema lookup and came back INTERNAL
  // ("schema.safeParse is not a function").
  const c = system.ref(Counter, 'proto-names');
  for (const type of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) {
    await expect(c.untyped.ask(type, {})).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining(
        `type: '${type}' is not a message of actor kind 'counter'`,
      ) as string,
    });
  }
  expect(await c.ask('add', { by: 1 })).toBe(1);
});

test('a handler error becomes an error reply and never kills the host', async () => {
  const c = system.ref(Counter, 'errs');
  await expect(c.ask('fail', { code: 'boom' })).rejects.toMatchObject({
    code: 'INTERNAL',
    message: 'boom',
  });
  expect(await c.ask('add', { by: 3 })).toBe(3);
});

test('a handler that produces an invalid state gets INTERNAL and the state is unchanged', async () => {
  const c = system.ref(Counter, 'corrupt');
  expect(await c.ask('add', { by: 2 })).toBe(2);
  await expect(c.ask('corrupt', {})).rejects.toMatchObject({ code: 'INTERNAL' });
  expect(await c.ask('get', {})).toBe(2);
  expect((await system.states.read(c.address))!.record.data).toEqual({ count: 2, log: [2] });
});

test('poison and invalid posts go to the dead-letter stream with their error; later posts still apply', async () => {
  const c = system.ref(Counter, 'poison');
  const bad = await c.post('fail', { code: 'boom' });
  const invalid = await c.untyped.post('add', { by: 'x' });
  const good = await c.post('add', { by: 4 });
  await waitFor(async () => (await system.states.read(c.address))?.record.cursor === good.seq, {
    timeoutMs: 15_000,
  });
  expect(await c.ask('get', {})).toBe(4);
  const nc = await connect({ servers: server.url });
  try {
    const jsm = await jetstreamManager(nc);
    const stream = deadLetterStreamName(cluster);
    await waitFor(async () => (await jsm.streams.info(stream)).state.messages === 2, {
      timeoutMs: 5_000,
    });
    const subject = deadLetterSubject(cluster, c.address);
    const first = await jsm.streams.getMessage(stream, { seq: 1 });
    const second = await jsm.streams.getMessage(stream, { seq: 2 });
    const errors = [first, second].map((m) => decodeErrorHeaders(m!.header));
    expect([first!.subject, second!.subject]).toEqual([subject, subject]);
    const bySeq = new Map(
      [first, second].map((m, i) => [Number(m!.header.get('Troupe-Original-Seq')), errors[i]]),
    );
    expect(bySeq.get(bad.seq)).toMatchObject({ code: 'INTERNAL', message: 'boom' });
    expect(bySeq.get(invalid.seq)).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(bySeq.get(invalid.seq)!.message).toContain('add.by');
  } finally {
    await nc.close();
  }
});

test('ask times out with TIMEOUT and can be aborted', async () => {
  const c = system.ref(Counter, 'slowpoke');
  const started = Date.now();
  const err = (await c
    .ask('slow', { ms: 5_000 }, { timeoutMs: 300 })
    .catch((e: unknown) => e)) as TroupeError;
  expect(isTimeout(err)).toBe(true);
  expect(Date.now() - started).toBeLessThan(3_000);
  const ac = new AbortController();
  const pending = c.ask('slow', { ms: 5_000 }, { signal: ac.signal });
  ac.abort('user');
  await expect(pending).rejects.toMatchObject({ code: 'CANCELLED' });
});

test('requireIdle asks get BUSY while a turn runs', async () => {
  const c = system.ref(Counter, 'busy');
  await c.ask('get', {});
  const slow = c.ask('slow', { ms: 1_000 });
  await waitFor(
    async () => {
      const r = await c.ask('get', {}, { requireIdle: true }).then(
        () => 'idle',
        (e: TroupeError) => e.code,
      );
      return r === 'BUSY';
    },
    { timeoutMs: 5_000 },
  );
  await slow;
});

test('idle activations passivate and come back with the same state', async () => {
  const s = system.ref(Sleepy, 's1');
  expect(await s.ask('add', { by: 9 })).toBe(9);
  await waitFor(async () => (await system.directory.get(s.address)).entry.state === 'SLEEPING', {
    timeoutMs: 5_000,
  });
  expect(system.activationCount).toBe(0);
  expect(await s.ask('add', { by: 1 })).toBe(10);
  expect((await system.directory.get(s.address)).entry.epoch).toBe(2);
});

test('an actor that asks to passivate when idle sleeps after its turn, not its idle timeout', async () => {
  const Done = defineActor({
    kind: 'done-after-turn',
    state: z.object({ turns: z.number() }),
    initialState: () => ({ turns: 0 }),
    messages: { turn: z.object({ last: z.boolean() }) },
    idleTimeoutMs: 120_000,
    handlers: {
      turn: (ctx, msg, state) => {
        if (msg.last) ctx.passivateWhenIdle();
        return { state: { turns: state.turns + 1 }, reply: state.turns + 1 };
      },
    },
  });
  const own = await ActorSystem.start({
    cluster: randomClusterName(),
    servers: server.url,
    hosting: [Done],
  });
  try {
    const kept = own.ref(Done, 'kept');
    const done = own.ref(Done, 'done');
    expect(await kept.ask('turn', { last: false })).toBe(1);
    // Posted: the turn commits, then the activation ends with nothing left in its inbox.
    const r = await done.post('turn', { last: true });
    await waitFor(
      async () => {
        const { entry } = await own.directory.get(done.address);
        return entry.state === 'SLEEPING' && entry.epoch === 1;
      },
      { timeoutMs: 10_000 },
    );
    expect((await own.states.read(done.address))?.record.cursor).toBe(r.seq);
    // The other one, which did not ask, waits out its idle timeout.
    expect((await own.directory.get(kept.address)).entry.state).toBe('IDLE');
    expect(own.activationCount).toBe(1);
    // The next message activates it again, its state kept.
    expect(await done.ask('turn', { last: false })).toBe(2);
    expect((await own.directory.get(done.address)).entry).toMatchObject({
      state: 'IDLE',
      epoch: 2,
    });
  } finally {
    await own.shutdown({ graceMs: 1_000 });
  }
});

const Vetted = defineActor({
  kind: 'vetted',
  state: z.object({ total: z.number(), refused: z.array(z.string()) }),
  initialState: () => ({ total: 0, refused: [] as string[] }),
  messages: { add: z.object({ by: z.number().int() }) },
  handlers: { add: (_ctx, msg, state) => ({ state: { ...state, total: state.total + msg.by } }) },
  onInvalid: (ctx, { type, payload, error }, state) => {
    if ((payload as { by?: unknown }).by === 'throw') throw new Error('onInvalid failed');
    const seen = `${type} #${ctx.message.seq} ${JSON.stringify(payload)} ${error.code}: ${error.message}`;
    return { state: { ...state, refused: [...state.refused, seen] } };
  },
});

test('onInvalid sees an invalid post before it is dead-lettered, and its state is committed with the cursor', async () => {
  const own = await ActorSystem.start({
    cluster: randomClusterName(),
    servers: server.url,
    hosting: [Vetted],
  });
  try {
    const v = own.ref(Vetted, 'v1');
    const invalid = await v.untyped.post('add', { by: 'x' });
    const throwing = await v.untyped.post('add', { by: 'throw' });
    const good = await v.post('add', { by: 3 });
    await waitFor(async () => (await own.states.read(v.address))?.record.cursor === good.seq, {
      timeoutMs: 15_000,
    });
    const data = (await own.states.read(v.address))!.record.data as z.infer<typeof Vetted.state>;
    expect(data.total).toBe(3);
    // One entry: the hook that threw changed nothing, and its message was still dead-lettered.
    expect(data.refused).toHaveLength(1);
    expect(data.refused[0]).toMatch(
      new RegExp(`^add #${invalid.seq} \\{"by":"x"\\} INVALID_ARGUMENT: .*add\\.by`),
    );
    const jsm = await jetstreamManager(own.nc);
    const stream = deadLetterStreamName(own.cluster);
    await waitFor(async () => (await jsm.streams.info(stream)).state.messages === 2, {
      timeoutMs: 5_000,
    });
    const originals = await Promise.all(
      [1, 2].map(async (seq) =>
        Number((await jsm.streams.getMessage(stream, { seq }))!.header.get('Troupe-Original-Seq')),
      ),
    );
    expect(originals.sort((a, b) => a - b)).toEqual([invalid.seq, throwing.seq]);
  } finally {
    await own.shutdown({ graceMs: 1_000 });
  }
});

test('an actor that passivates after every turn answers asks sent back to back', async () => {
  // Like a sandbox with nothing left to hold: each turn ends with a passivation, so the next
  // ask finds the activation on its way out (still in the directory) and must wait it out.
  const late: { system?: ActorSystem } = {};
  const OneShot = defineActor({
    kind: 'one-shot',
    state: z.object({ turns: z.number() }),
    initialState: () => ({ turns: 0 }),
    messages: { turn: z.object({}) },
    handlers: {
      turn: (ctx, _msg, state) => {
        const self = ctx.self;
        setImmediate(() => void late.system?.deactivate(self).catch(() => undefined));
        return { state: { turns: state.turns + 1 }, reply: state.turns + 1 };
      },
    },
  });
  const own = await ActorSystem.start({
    cluster: randomClusterName(),
    servers: server.url,
    hosting: [OneShot],
  });
  late.system = own;
  try {
    const ref = own.ref(OneShot, 'o1');
    const replies: number[] = [];
    for (let i = 0; i < 30; i++) replies.push(await ref.ask('turn', {}, { timeoutMs: 10_000 }));
    expect(replies).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
  } finally {
    await own.shutdown({ graceMs: 1_000 });
  }
});

test('deactivate with an epoch stops only the activation of that epoch', async () => {
  // A caller that read the epoch earlier (the node agent's passivation, reading the directory)
  // must not stop a newer activation that started since.
  const Epochs = defineActor({
    kind: 'epochs',
    state: z.object({}),
    initialState: () => ({}),
    messages: { epoch: z.object({}) },
    handlers: { epoch: (ctx) => ({ reply: ctx.epoch }) },
  });
  const own = await ActorSystem.start({
    cluster: randomClusterName(),
    servers: server.url,
    hosting: [Epochs],
  });
  try {
    const ref = own.ref(Epochs, 'e1');
    const first = await ref.ask('epoch', {}, { timeoutMs: 10_000 });
    await own.deactivate(ref.address, first - 1);
    expect(own.activationCount).toBe(1);
    expect(await ref.ask('epoch', {}, { timeoutMs: 10_000 })).toBe(first);
    await own.deactivate(ref.address, first);
    expect(own.activationCount).toBe(0);
    expect(await ref.ask('epoch', {}, { timeoutMs: 10_000 })).toBeGreaterThan(first);
  } finally {
    await own.shutdown({ graceMs: 1_000 });
  }
});

test('an ask that reaches an activation with a slow passivation waits it out', async () => {
  // Like a sandbox whose container takes seconds to remove: asks sent meanwhile are told the
  // actor is passivating, and must be answered by the next activation, not fail.
  let deactivating!: () => void;
  const started = new Promise<void>((resolve) => (deactivating = resolve));
  const SlowExit = defineActor({
    kind: 'slow-exit',
    state: z.object({ turns: z.number() }),
    initialState: () => ({ turns: 0 }),
    messages: { turn: z.object({}) },
    handlers: {
      turn: (_ctx, _msg, state) => ({
        state: { turns: state.turns + 1 },
        reply: state.turns + 1,
      }),
    },
    onDeactivate: async () => {
      deactivating();
      await new Promise((resolve) => setTimeout(resolve, 2_500));
    },
  });
  const own = await ActorSystem.start({
    cluster: randomClusterName(),
    servers: server.url,
    hosting: [SlowExit],
  });
  try {
    const ref = own.ref(SlowExit, 's1');
    expect(await ref.ask('turn', {}, { timeoutMs: 10_000 })).toBe(1);
    const passivated = own.deactivate(ref.address);
    await started;
    const askedAt = Date.now();
    expect(await ref.ask('turn', {}, { timeoutMs: 20_000 })).toBe(2);
    // Answered by the next activation, once the passivation had ended.
    expect(Date.now() - askedAt).toBeGreaterThanOrEqual(1_000);
    await passivated;
    expect(own.activationCount).toBe(1);
  } finally {
    await own.shutdown({ graceMs: 1_000 });
  }
});
