import { connect, type NatsConnection } from '@nats-io/transport-node';
import { actorSubject, decodeErrorHeaders, encodeErrorHeaders } from '@troupe/proto';
import { randomClusterName, startNatsServer, type NatsServerHandle } from '@troupe/testkit';
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { defineActor } from '../../src/actor-definition';
import { ActorSystem } from '../../src/actor-system';
import { movedError } from '../../src/internal/core-item';
import { decodeJson, encodeJson } from '../../src/internal/json-codec';

// An ask is asked again after an answer that the actor "moved" or "is passivating", and after
// finding nobody at its subject. An activation on its way out that is still subscribed answers
// so before the live one answers the same request: chaos seed 8704's sandbox ran one
// `startBackground` eight times, one per round of its asker. The live activation now knows the
// ask by its id (envelope `n`) and runs it once.

let server: NatsServerHandle;
let cluster: string;
let host: ActorSystem;
let raw: NatsConnection;
const runs: string[] = [];

const Counter = defineActor({
  kind: 'counter',
  state: z.object({ n: z.number().int() }),
  initialState: () => ({ n: 0 }),
  messages: { bump: z.object({ tag: z.string() }) },
  handlers: {
    bump: async (_ctx, msg, state) => {
      runs.push(msg.tag);
      await delay(300);
      return { state: { n: state.n + 1 }, reply: { n: state.n + 1 } };
    },
  },
  idleTimeoutMs: 600_000,
});

beforeAll(async () => {
  server = await startNatsServer();
  cluster = randomClusterName();
  host = await ActorSystem.start({ cluster, servers: [server.url], hosting: [Counter] });
  raw = await connect({ servers: server.url });
});
afterAll(async () => {
  await raw?.close();
  await host?.shutdown({ graceMs: 0 });
  await server?.stop();
});
beforeEach(() => {
  runs.length = 0;
});

/** One round of an ask with id `n`, sent as an asker's round is. */
async function round(id: string, n: string, tag: string): Promise<unknown> {
  const envelope = { t: 'bump', m: { tag }, d: Date.now() + 10_000, n };
  const reply = await raw.request(
    actorSubject(cluster, { kind: 'counter', id }),
    encodeJson(envelope),
    {
      timeout: 10_000,
    },
  );
  const error = reply.headers ? decodeErrorHeaders(reply.headers) : undefined;
  if (error) throw error;
  return decodeJson(reply.data);
}

test('a repeat of an ask in progress joins it, and one after its answer gets that answer', async () => {
  const ref = host.refOf({ kind: 'counter', id: 'c1' });
  await ref.ask('bump', { tag: 'warm-up' });
  runs.length = 0;
  const [first, repeat] = await Promise.all([
    round('c1', 'ask-1', 'a'),
    delay(50).then(() => round('c1', 'ask-1', 'a')),
  ]);
  expect(first).toEqual({ n: 2 });
  expect(repeat).toEqual({ n: 2 });
  expect(await round('c1', 'ask-1', 'a')).toEqual({ n: 2 });
  expect(runs).toEqual(['a']);
  // Another id is another ask.
  expect(await round('c1', 'ask-2', 'b')).toEqual({ n: 3 });
  expect(runs).toEqual(['a', 'b']);
});

test('an activation on its way out answering "moved" first does not make the live one run an ask again', async () => {
  const ref = host.refOf({ kind: 'counter', id: 'c2' });
  await ref.ask('bump', { tag: 'warm-up' });
  runs.length = 0;
  // Still subscribed to the actor's subject, as an activation that is passivating is until its
  // subscription drains, and quicker to answer than the live one's 300 ms turn.
  const leaving = await connect({ servers: server.url });
  leaving.subscribe(actorSubject(cluster, { kind: 'counter', id: 'c2' }), {
    callback: (_err, m) => {
      m.respond(new Uint8Array(), {
        headers: encodeErrorHeaders(movedError('counter/c2', 'is passivating')),
      });
    },
  });
  await leaving.flush();
  try {
    // Rounds answered "moved" first are asked again: a later one may get the live activation's
    // answer (remembered by then), or every one is beaten and the asker gives up; either way
    // the live activation ran the ask once, not once per round.
    const outcome = await ref.ask('bump', { tag: 'x' }, { timeoutMs: 10_000 }).then(
      (reply) => reply,
      (err: unknown) => err,
    );
    if (outcome instanceof Error) {
      expect(outcome).toMatchObject({ code: 'UNAVAILABLE', details: { moved: true } });
    } else {
      expect(outcome).toEqual({ n: 2 });
    }
  } finally {
    await leaving.close();
  }
  expect(runs).toEqual(['x']);
  expect(await ref.ask('bump', { tag: 'y' })).toEqual({ n: 3 });
});
