import { jetstream } from '@nats-io/jetstream';
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
  try {
    const ref = own.refOf({ kind: 'once-then-sleep', id: 'live' });
    // Live and busy: a hinted post would be read by this activation after its turn.
    await ref.post('turn', { name: 'first', hold: true });
    await g.inTurn;
    let hints = 0;
    const sub = spy.subscribe(actorSubject(cluster, ref.address), { callback: () => void hints++ });
    await spy.flush();
    const quiet = await ref.post('turn', { name: 'quiet', hold: false }, { hint: false });
    const hinted = await ref.post('turn', { name: 'hinted', hold: false });
    await own.nc.flush();
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
    await own.shutdown({ graceMs: 1_000 });
  }
});
