import {
  deadLetterStreamName,
  ErrorReason,
  hasReason,
  inboxStreamName,
  inboxSubject,
} from '@troupe/proto';
import { jetstream } from '@nats-io/jetstream';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { z } from 'zod';
import { defineActor } from '../../src/actor-definition';
import { ActorSystem } from '../../src/actor-system';

// A handler that posts to another actor while the inbox stream does not answer (a NATS server
// restarting, its stream electing a leader) used to fail like any handler error: five attempts in
// about 3.5 s, then the message was dead-lettered. In the chaos harness that lost task outcomes
// (seed 4000: every task actor's post to its job failed "no stream answered" for 4 s after a
// nats-server restart, and the job waited for outcomes that never came). A post that no stream
// answers is a store outage: the message is retried until the stream is back.

let server: NatsServerHandle;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});

const relayCalls: unknown[] = [];
const received: number[] = [];

const Sink = defineActor({
  kind: 'sink',
  state: z.object({}),
  initialState: () => ({}),
  messages: { put: z.object({ v: z.number().int() }) },
  handlers: {
    put: (_ctx, msg) => {
      received.push(msg.v);
      return {};
    },
  },
});

const Relay = defineActor({
  kind: 'relay',
  state: z.object({}),
  initialState: () => ({}),
  messages: { forward: z.object({ v: z.number().int() }) },
  handlers: {
    forward: async (ctx, msg) => {
      try {
        await ctx.refs.ref(Sink, 's').post('put', { v: msg.v }, { dedupeId: `put-${msg.v}` });
        relayCalls.push('ok');
      } catch (err) {
        relayCalls.push(err);
        throw err;
      }
      return {};
    },
  },
});

test('a posted message whose handler cannot post (no inbox stream answers) waits for the stream instead of being dead-lettered', async () => {
  const cluster = randomClusterName();
  const system = await ActorSystem.start({
    cluster,
    servers: server.url,
    hosting: [Relay, Sink],
  });
  const stream = inboxStreamName(cluster);
  const { config } = await system.jsm.streams.info(stream);
  try {
    // The stream stops taking the sink's inbox: a post there finds no stream.
    const sinkSubject = inboxSubject(cluster, { kind: 'sink', id: 's' });
    const relaySubject = inboxSubject(cluster, { kind: 'relay', id: 'r' });
    await system.jsm.streams.update(stream, { ...config, subjects: [relaySubject] });
    expect(sinkSubject).not.toBe(relaySubject);
    await system.ref(Relay, 'r').post('forward', { v: 1 });
    // More failures than a message is allowed before its dead letter (5).
    await waitFor(() => relayCalls.length >= 6, { timeoutMs: 30_000 });
    expect(relayCalls.every((c) => c !== 'ok')).toBe(true);
    expect(relayCalls.every((c) => hasReason(c, ErrorReason.STORE_UNAVAILABLE))).toBe(true);

    const refused: unknown = await system
      .ref(Sink, 's')
      .post('put', { v: 0 })
      .catch((err: unknown) => err);
    expect(hasReason(refused, ErrorReason.STORE_UNAVAILABLE)).toBe(true);

    await system.jsm.streams.update(stream, config);
    await waitFor(() => received.includes(1), { timeoutMs: 30_000 });
    expect(received).toEqual([1]);
    expect(relayCalls.at(-1)).toBe('ok');
  } finally {
    await system.shutdown({ graceMs: 500 });
  }
});

// Chaos seed 8011: a job actor's `start` wrote the job's plan to the object store while a NATS
// server was down; nats.js failed it "jetstream is not enabled", the runtime counted that as a
// failed attempt, and after five in 3 s the `start` was dead-lettered: the job never ran. A
// handler's own JetStream call that NATS fails transiently is a store outage too.
test('a handler whose own JetStream write finds no stream is retried, not dead-lettered', async () => {
  const cluster = randomClusterName();
  const system = await ActorSystem.start({ cluster, servers: server.url, hosting: [] });
  const js = jetstream(system.nc);
  const writes: unknown[] = [];
  let streamUp = false;
  const Writer = defineActor({
    kind: 'writer',
    state: z.object({ written: z.number().int() }),
    initialState: () => ({ written: 0 }),
    messages: { write: z.object({}) },
    handlers: {
      write: async (_ctx, _msg, state) => {
        try {
          // No stream takes this subject until the test adds one: nats.js fails the publish.
          await js.publish(`plans.${cluster}`, 'plan');
          writes.push('ok');
        } catch (err) {
          writes.push(err);
          throw err;
        }
        return { state: { written: state.written + 1 } };
      },
    },
  });
  const host = await ActorSystem.start({ cluster, servers: server.url, hosting: [Writer] });
  try {
    await host.ref(Writer, 'w').post('write', {});
    // More failures than a message is allowed before its dead letter (5).
    await waitFor(() => writes.length >= 7, { timeoutMs: 30_000 });
    expect(writes.every((w) => w !== 'ok')).toBe(true);
    expect(writes.every((w) => (w as Error).message.includes('jetstream is not enabled'))).toBe(
      true,
    );
    await system.jsm.streams.add({ name: `PLANS_${cluster}`, subjects: [`plans.${cluster}`] });
    streamUp = true;
    await waitFor(
      async () =>
        (
          (await host.states.read({ kind: 'writer', id: 'w' }))?.record.data as
            { written: number } | undefined
        )?.written === 1,
      { timeoutMs: 30_000, message: 'the write applied once the stream answers' },
    );
    expect(writes.at(-1)).toBe('ok');
    const dlq = await system.jsm.streams.info(deadLetterStreamName(cluster)).catch(() => undefined);
    expect(dlq?.state.messages ?? 0).toBe(0);
  } finally {
    if (streamUp) await system.jsm.streams.delete(`PLANS_${cluster}`);
    await host.shutdown({ graceMs: 500 });
    await system.shutdown({ graceMs: 500 });
  }
});
