import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import {
  actorSubject,
  coordSubject,
  encodeErrorHeaders,
  Header,
  inboxStreamName,
  inboxSubject,
  noopLogger,
} from '@troupe/proto';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { z } from 'zod';
import { defineActor } from '../../src/actor-definition';
import { ActorSystem } from '../../src/actor-system';
import { placerStoppedError } from '../../src/internal/protocol';
import { PlacementService } from '../../src/placement-service';

// How an activation learns of posts without reading its inbox for nothing. One that asked to
// passivate when idle does not read it after its last turn: the read it makes once its directory
// entry is SLEEPING finds whatever came without a hint. A post may skip its hint (to an actor
// that is almost certainly asleep): the inbox watcher still hints it when it is live.

let server: NatsServerHandle;
let spy: NatsConnection;
beforeAll(async () => {
  server = await startNatsServer();
  spy = await connect({ servers: server.url });
});
afterAll(async () => {
  await spy.close();
  await server.stop();
});

/** Records each message's name; `hold` turns wait for `gate` after saying they started. */
function onceActor(gate: { entered: () => void; held: Promise<void> }) {
  return defineActor({
    kind: 'once-then-sleep',
    state: z.object({ seen: z.array(z.string()) }),
    initialState: () => ({ seen: [] as string[] }),
    messages: { turn: z.object({ name: z.string(), hold: z.boolean() }) },
    idleTimeoutMs: 120_000,
    handlers: {
      turn: async (ctx, msg, state) => {
        ctx.passivateWhenIdle();
        if (msg.hold) {
          gate.entered();
          await gate.held;
        }
        return { state: { seen: [...state.seen, msg.name] } };
      },
    },
  });
}

function gate() {
  let release!: () => void;
  let entered!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const inTurn = new Promise<void>((resolve) => (entered = resolve));
  return { held, inTurn, release, entered };
}

test('a passivating actor reads its inbox twice for one post: to find it, and after release', async () => {
  const cluster = randomClusterName();
  const g = gate();
  const own = await ActorSystem.start({
    cluster,
    servers: server.url,
    hosting: [onceActor(g)],
  });
  try {
    // Every inbox read is a direct get on the inbox stream.
    let reads = 0;
    const sub = spy.subscribe(`$JS.API.DIRECT.GET.${inboxStreamName(cluster)}`, {
      callback: () => void reads++,
    });
    await spy.flush();
    const ref = own.refOf({ kind: 'once-then-sleep', id: 'quiet' });
    const r = await ref.post('turn', { name: 'a', hold: false });
    await waitFor(
      async () => {
        const { entry } = await own.directory.get(ref.address);
        return entry.state === 'SLEEPING' && entry.epoch === 1;
      },
      { timeoutMs: 10_000 },
    );
    expect((await own.states.read(ref.address))?.record.cursor).toBe(r.seq);
    // The read after release is made once the entry is SLEEPING: wait for it.
    await waitFor(async () => reads >= 2, { timeoutMs: 10_000 });
    await own.nc.flush();
    await spy.flush();
    // Not a third, between the turn and the release: no hint named another message.
    expect(reads).toBe(2);
    sub.unsubscribe();
  } finally {
    await own.shutdown({ graceMs: 1_000 });
  }
});

test('a post stored unhinted during the last turn wakes a new activation after release', async () => {
  const cluster = randomClusterName();
  const g = gate();
  const host = await ActorSystem.start({
    cluster,
    servers: server.url,
    hostId: 'host-a',
    hosting: [onceActor(g)],
    placement: 'none',
  });
  const placerOf = () =>
    new PlacementService({
      transport: host.transport,
      jsm: host.jsm,
      directory: host.directory,
      states: host.states,
      log: noopLogger,
      selectHost: async () => ({ hostId: 'host-a' }),
      sweepIntervalMs: 60_000,
    });
  let placer = placerOf();
  await placer.start();
  try {
    const ref = host.refOf({ kind: 'once-then-sleep', id: 'busy' });
    await ref.post('turn', { name: 'first', hold: true });
    await g.inTurn;
    // No placer, so no inbox watcher: nothing hints the next post (as if its poster died after
    // the stream's ack).
    await placer.stop();
    // Who asks for an activation now, told (as by a placer stepping down) to ask again later.
    const activations: string[] = [];
    const asks = spy.subscribe(coordSubject(cluster, 'sched', 'activate'), {
      callback: (_err, m) => {
        activations.push(m.string());
        // Gone before the answer is sent: the retry finds no responder here (or the new placer).
        asks.unsubscribe();
        m.respond(new Uint8Array(0), { headers: encodeErrorHeaders(placerStoppedError('busy')) });
      },
    });
    await spy.flush();
    const h = natsHeaders();
    h.set(Header.MSG_TYPE, 'turn');
    const ack = await jetstream(spy).publish(
      inboxSubject(cluster, ref.address),
      new TextEncoder().encode(JSON.stringify({ name: 'unhinted', hold: false })),
      { headers: h },
    );
    g.release();
    // The activation commits `first`, releases its entry and, reading the inbox once more, finds
    // the unhinted post: it asks for a new activation itself.
    await waitFor(async () => activations.length > 0, { timeoutMs: 10_000 });
    expect(JSON.parse(activations[0]!)).toMatchObject({ addr: ref.address });
    const committed = (await host.states.read(ref.address))?.record;
    expect(committed?.data).toEqual({ seen: ['first'] });
    expect(committed?.cursor).toBeLessThan(ack.seq);
    placer = placerOf();
    await placer.start();
    await waitFor(async () => (await host.states.read(ref.address))?.record.cursor === ack.seq, {
      timeoutMs: 10_000,
    });
    expect((await host.states.read(ref.address))?.record.data).toEqual({
      seen: ['first', 'unhinted'],
    });
    // The new activation passivates too.
    await waitFor(
      async () => {
        const { entry } = await host.directory.get(ref.address);
        return entry.state === 'SLEEPING' && entry.epoch === 2;
      },
      { timeoutMs: 10_000 },
    );
  } finally {
    await placer.stop();
    await host.shutdown({ graceMs: 1_000 });
  }
});

test('a post without a hint sends none over NATS, and a live actor still gets it', async () => {
  const cluster = randomClusterName();
  const g = gate();
  const own = await ActorSystem.start({ cluster, servers: server.url, hosting: [onceActor(g)] });
  // Posts from another process: a post to an activation of its own process hints it directly.
  const other = await ActorSystem.start({ cluster, servers: server.url });
  try {
    const ref = other.refOf({ kind: 'once-then-sleep', id: 'live' });
    // Live and busy: a hinted post would be read by this activation after its turn.
    await ref.post('turn', { name: 'first', hold: true });
    await g.inTurn;
    let hints = 0;
    const sub = spy.subscribe(actorSubject(cluster, ref.address), { callback: () => void hints++ });
    await spy.flush();
    const quiet = await ref.post('turn', { name: 'quiet', hold: false }, { hint: false });
    const hinted = await ref.post('turn', { name: 'hinted', hold: false });
    await other.nc.flush();
    await spy.flush();
    g.release();
    await waitFor(async () => (await own.states.read(ref.address))?.record.cursor === hinted.seq, {
      timeoutMs: 10_000,
    });
    expect(quiet.seq).toBeLessThan(hinted.seq);
    expect((await own.states.read(ref.address))?.record.data).toEqual({
      seen: ['first', 'quiet', 'hinted'],
    });
    // The default post's hint went over NATS; the one without sent none.
    expect(hints).toBe(1);
    sub.unsubscribe();
  } finally {
    await other.shutdown({ graceMs: 1_000 });
    await own.shutdown({ graceMs: 1_000 });
  }
});

test('a post to a live activation in its own process hints it without NATS', async () => {
  const cluster = randomClusterName();
  const g = gate();
  const own = await ActorSystem.start({ cluster, servers: server.url, hosting: [onceActor(g)] });
  try {
    const ref = own.refOf({ kind: 'once-then-sleep', id: 'local' });
    await ref.post('turn', { name: 'first', hold: true });
    await g.inTurn;
    // Every message on the actor's subject: mail hints and tells from anyone.
    let onSubject = 0;
    const sub = spy.subscribe(actorSubject(cluster, ref.address), {
      callback: () => void onSubject++,
    });
    await spy.flush();
    const posts = [];
    for (let i = 0; i < 5; i++) posts.push(await ref.post('turn', { name: `p${i}`, hold: false }));
    await own.nc.flush();
    await spy.flush();
    g.release();
    const last = posts.at(-1)!.seq;
    await waitFor(async () => (await own.states.read(ref.address))?.record.cursor === last, {
      timeoutMs: 10_000,
    });
    expect((await own.states.read(ref.address))?.record.data).toEqual({
      seen: ['first', 'p0', 'p1', 'p2', 'p3', 'p4'],
    });
    // Neither the posts nor the inbox watcher (the placer is in this process too) sent a hint.
    await own.nc.flush();
    await spy.flush();
    expect(onSubject).toBe(0);
    sub.unsubscribe();
  } finally {
    await own.shutdown({ graceMs: 1_000 });
  }
});

test('posts the inbox watcher hands to a live activation in its process are not read again', async () => {
  const cluster = randomClusterName();
  const g = gate();
  // The actor and the placer (whose inbox watcher sees every post) in one process; the posts
  // from another, as a job's task outcomes come from node agents.
  const own = await ActorSystem.start({ cluster, servers: server.url, hosting: [onceActor(g)] });
  const other = await ActorSystem.start({ cluster, servers: server.url });
  try {
    const ref = other.refOf({ kind: 'once-then-sleep', id: 'pushed' });
    await ref.post('turn', { name: 'first', hold: true });
    await g.inTurn;
    const names = Array.from({ length: 10 }, (_, i) => `p${i}`);
    const posts = [];
    for (const name of names) posts.push(await ref.post('turn', { name, hold: false }));
    const last = posts.at(-1)!.seq;
    // Every post delivered to the watcher and handed over (acknowledged) before the turn ends.
    const jsm = await jetstreamManager(spy);
    await waitFor(
      async () => {
        const c = await jsm.consumers.info(inboxStreamName(cluster), 'troupe-wake');
        return c.delivered.stream_seq >= last && c.num_ack_pending === 0;
      },
      { timeoutMs: 10_000, message: 'the inbox watcher delivered every post' },
    );
    let reads = 0;
    const sub = spy.subscribe(`$JS.API.DIRECT.GET.${inboxStreamName(cluster)}`, {
      callback: () => void reads++,
    });
    await spy.flush();
    g.release();
    await waitFor(async () => (await own.states.read(ref.address))?.record.cursor === last, {
      timeoutMs: 10_000,
    });
    expect((await own.states.read(ref.address))?.record.data).toEqual({
      seen: ['first', ...names],
    });
    await own.nc.flush();
    await spy.flush();
    // The first post after `first` is read (a push proves only what follows the push before
    // it), so may the end of the batch be; the other nine came with their pushes.
    expect(reads).toBeGreaterThanOrEqual(1);
    expect(reads).toBeLessThanOrEqual(3);
    sub.unsubscribe();
  } finally {
    await other.shutdown({ graceMs: 1_000 });
    await own.shutdown({ graceMs: 1_000 });
  }
});

test('a headers-only inbox watcher left by an older placer is changed in place', async () => {
  const cluster = randomClusterName();
  const g = gate();
  const first = await ActorSystem.start({ cluster, servers: server.url, hosting: [onceActor(g)] });
  const ref = first.refOf({ kind: 'once-then-sleep', id: 'upgraded' });
  await ref.post('turn', { name: 'before', hold: false });
  await waitFor(async () => (await first.states.read(ref.address))?.record.data !== undefined, {
    timeoutMs: 10_000,
  });
  await first.shutdown({ graceMs: 1_000 });
  const jsm = await jetstreamManager(spy);
  const stream = inboxStreamName(cluster);
  await jsm.consumers.update(stream, 'troupe-wake', { headers_only: true });
  const delivered = (await jsm.consumers.info(stream, 'troupe-wake')).delivered.stream_seq;
  const again = await ActorSystem.start({ cluster, servers: server.url, hosting: [onceActor(g)] });
  try {
    const info = await jsm.consumers.info(stream, 'troupe-wake');
    expect(info.config.headers_only ?? false).toBe(false);
    // Same consumer, same position: nothing delivered again.
    expect(info.delivered.stream_seq).toBe(delivered);
    const after = await again.refOf(ref.address).post('turn', { name: 'after', hold: false });
    await waitFor(async () => (await again.states.read(ref.address))?.record.cursor === after.seq, {
      timeoutMs: 10_000,
    });
    expect((await again.states.read(ref.address))?.record.data).toEqual({
      seen: ['before', 'after'],
    });
  } finally {
    await again.shutdown({ graceMs: 1_000 });
  }
});

test('posts in the placer process hint again while the watcher is held by waiting wakes', async () => {
  const cluster = randomClusterName();
  // Stays live and idle: without a hint or a hand-over it does not read its inbox again.
  const steady = defineActor({
    kind: 'steady',
    state: z.object({ seen: z.array(z.string()) }),
    initialState: () => ({ seen: [] as string[] }),
    messages: { turn: z.object({ name: z.string() }) },
    idleTimeoutMs: 120_000,
    handlers: {
      turn: (_ctx, msg, state) => ({ state: { seen: [...state.seen, msg.name] } }),
    },
  });
  const host = await ActorSystem.start({
    cluster,
    servers: server.url,
    hostId: 'host-a',
    hosting: [steady],
    placement: 'none',
  });
  let unblock!: () => void;
  const blocked = new Promise<void>((resolve) => (unblock = resolve));
  const placer = new PlacementService({
    transport: host.transport,
    jsm: host.jsm,
    directory: host.directory,
    states: host.states,
    log: noopLogger,
    localHost: host.localHost!,
    // Wakes of `parked` actors wait for capacity that never comes (until the test ends).
    selectHost: async ({ addr }) => {
      if (addr.kind === 'parked') await blocked;
      return { hostId: 'host-a' };
    },
    activationTimeoutMs: 60_000,
    sweepIntervalMs: 60_000,
    wakeMaxAckPending: 4,
  });
  await placer.start();
  try {
    const ref = host.refOf({ kind: 'steady', id: 's' });
    const first = await ref.post('turn', { name: 'first' });
    await waitFor(async () => (await host.states.read(ref.address))?.record.cursor === first.seq, {
      timeoutMs: 10_000,
    });
    for (let i = 0; i < 4; i++) await host.refOf({ kind: 'parked', id: `p${i}` }).post('turn', {});
    const jsm = await jetstreamManager(spy);
    await waitFor(
      async () =>
        (await jsm.consumers.info(inboxStreamName(cluster), 'troupe-wake')).num_ack_pending === 4,
      { timeoutMs: 10_000, message: 'four wakes waiting, the watcher at its limit' },
    );
    // The watcher delivers nothing now: this post's own hint is what reaches the actor.
    const second = await ref.post('turn', { name: 'second' });
    await waitFor(async () => (await host.states.read(ref.address))?.record.cursor === second.seq, {
      timeoutMs: 10_000,
      message: 'the post handled while the wakes still wait',
    });
    expect((await host.states.read(ref.address))?.record.data).toEqual({
      seen: ['first', 'second'],
    });
  } finally {
    unblock();
    await placer.stop();
    await host.shutdown({ graceMs: 1_000 });
  }
});
