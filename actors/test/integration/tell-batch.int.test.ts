import { connect, type NatsConnection } from '@nats-io/transport-node';
import { actorSubject, decodeErrorHeaders, type TroupeError } from '@troupe/proto';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { z } from 'zod';
import { defineActor } from '../../src/actor-definition';
import { ActorSystem } from '../../src/actor-system';

// Tells travel in batches: the tells made to one actor before the current task ends go in one
// NATS message ({"b": [envelope, …]}), in order, and an ask or a post's hint to that actor
// first sends the tells made before it.

let server: NatsServerHandle;
let raw: NatsConnection;
beforeAll(async () => {
  server = await startNatsServer();
  raw = await connect({ servers: server.url });
});
afterAll(async () => {
  await raw.close();
  await server.stop();
});

const Log = defineActor({
  kind: 'log',
  state: z.object({ seen: z.array(z.number().int()) }),
  initialState: () => ({ seen: [] as number[] }),
  messages: { add: z.object({ n: z.number().int() }), read: z.object({}) },
  handlers: {
    add: (_ctx, msg, state) => ({ state: { seen: [...state.seen, msg.n] } }),
    read: (_ctx, _msg, state) => ({ reply: state.seen }),
  },
  idleTimeoutMs: 600_000,
});

async function withSystems(
  fn: (host: ActorSystem, sender: ActorSystem, cluster: string) => Promise<void>,
): Promise<void> {
  const cluster = randomClusterName();
  const host = await ActorSystem.start({ cluster, servers: server.url, hosting: [Log] });
  const sender = await ActorSystem.start({ cluster, servers: server.url });
  try {
    await fn(host, sender, cluster);
  } finally {
    await sender.shutdown();
    await host.shutdown({ graceMs: 1_000 });
  }
}

test('1,000 tells in a loop arrive in order, in a handful of NATS messages', async () => {
  await withSystems(async (host, sender, cluster) => {
    const ref = sender.ref(Log, 'a');
    expect(await ref.ask('read', {})).toEqual([]); // live
    const subject = actorSubject(cluster, ref.address);
    let messages = 0;
    const sub = raw.subscribe(subject, {
      callback: () => {
        messages++;
      },
    });
    await raw.flush();
    for (let n = 0; n < 1_000; n++) ref.tell('add', { n });
    const seen = await waitFor(
      async () => {
        const s = await ref.ask('read', {});
        return s.length === 1_000 ? s : undefined;
      },
      { timeoutMs: 10_000, message: 'every tell handled' },
    );
    expect(seen).toEqual(Array.from({ length: 1_000 }, (_, n) => n));
    // 256 tells a message at most, plus the asks: one message per tell was 1,000.
    sub.unsubscribe();
    expect(messages).toBeLessThan(20);
    expect(messages).toBeGreaterThanOrEqual(4);
    void host;
  });
});

test('an ask made right after tells sees them handled first', async () => {
  await withSystems(async (_host, sender) => {
    const ref = sender.ref(Log, 'b');
    await ref.ask('read', {});
    for (let round = 0; round < 20; round++) {
      ref.tell('add', { n: 2 * round });
      ref.tell('add', { n: 2 * round + 1 });
      const seen = await ref.ask('read', {});
      expect(seen).toHaveLength(2 * round + 2);
    }
  });
});

test('a batch with malformed elements keeps the good ones; an ask of the hint type is refused', async () => {
  await withSystems(async (host, sender, cluster) => {
    const ref = sender.ref(Log, 'c');
    await ref.ask('read', {});
    const subject = actorSubject(cluster, ref.address);
    raw.publish(
      subject,
      JSON.stringify({
        b: [
          { t: 'add', m: { n: 1 } },
          5,
          { m: {} },
          { t: 'add', m: { n: 'x' } },
          { t: 'add', m: { n: 2 } },
        ],
      }),
    );
    await waitFor(async () => (await ref.ask('read', {})).length === 2, {
      timeoutMs: 5_000,
      message: 'the two valid tells of the batch handled',
    });
    expect(await ref.ask('read', {})).toEqual([1, 2]);

    // `$mail` is the hint's type: an ask of it is answered at once, naming the field.
    const reply = await raw.request(subject, JSON.stringify({ t: '$mail', m: { seq: 1 } }), {
      timeout: 5_000,
    });
    const error = decodeErrorHeaders(reply.headers);
    expect(error?.code).toBe('INVALID_ARGUMENT');
    expect(error?.message).toMatch(/^`payload\.t`: \$mail is reserved/);
    // Still serving.
    ref.tell('add', { n: 3 });
    await waitFor(async () => (await ref.ask('read', {})).length === 3, {
      timeoutMs: 5_000,
    });
    void host;
  });
});

test('a tell larger than the server allows throws at once, naming the limit', async () => {
  await withSystems(async (_host, sender) => {
    const ref = sender.ref(Log, 'd');
    let error: TroupeError | undefined;
    try {
      (ref as unknown as { tell(t: string, m: unknown): void }).tell('add', {
        n: 1,
        pad: 'x'.repeat(2 * 1024 * 1024),
      });
    } catch (err) {
      error = err as TroupeError;
    }
    expect(error?.code).toBe('INVALID_ARGUMENT');
    expect(error?.message).toMatch(/more than the server's max_payload/);
  });
});
