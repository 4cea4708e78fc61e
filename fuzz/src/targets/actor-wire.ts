import { ActorSystem, defineActor } from '@troupe/actors';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { actorSubject, decodeErrorHeaders } from '@troupe/proto';
import { randomClusterName, startNatsServer } from '@troupe/testkit';
import fc from 'fast-check';
import { z } from 'zod';
import { nastyString, wrongValue } from '../arbitraries';
import type { FuzzTarget } from '../fuzz-target';
import { judgeError } from '../oracle';

/** An actor with a typical message schema: nested fields, bounds, enums and lists. */
const FuzzActor = defineActor({
  kind: 'fuzz-target',
  state: z.object({ puts: z.number().int() }),
  initialState: () => ({ puts: 0 }),
  messages: {
    put: z
      .object({
        key: z.string().regex(/^[a-z][a-z0-9-]{0,31}$/),
        value: z.number().int().min(0).max(1_000),
        mode: z.enum(['append', 'replace']).optional(),
        tags: z.array(z.string().max(16)).max(4).optional(),
        meta: z
          .object({ by: z.string().min(1) })
          .strict()
          .optional(),
      })
      .strict(),
    get: z.object({}),
  },
  handlers: {
    put: (_ctx, _msg, state) => ({ state: { puts: state.puts + 1 }, reply: state.puts + 1 }),
    get: (_ctx, _msg, state) => ({ reply: state.puts }),
  },
  idleTimeoutMs: 600_000,
});

/** A raw message on the actor's subject: payload bytes and headers, as an ask or a tell. */
export interface WireCase {
  payload: Uint8Array;
  headers: [string, string][];
  ask: boolean;
  how: string;
}

const validPut = { key: 'k', value: 1 };

/** The envelope's deadline `d` when the payload is an envelope with a numeric one, else +∞. */
function deadlineOf(payload: Uint8Array): number {
  try {
    const d = (JSON.parse(Buffer.from(payload).toString('utf8')) as { d?: unknown } | null)?.d;
    return typeof d === 'number' ? d : Number.POSITIVE_INFINITY;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}
const encode = (v: unknown) => Buffer.from(JSON.stringify(v) ?? 'null');

const envelope = fc.oneof(
  // A right envelope with a garbled message.
  fc
    .tuple(
      fc.constantFrom('put', 'get'),
      fc.oneof(
        wrongValue,
        fc.record({
          key: fc.oneof(nastyString, wrongValue),
          value: fc.oneof(fc.integer(), wrongValue),
        }),
        fc.record(
          {
            key: fc.constant('k'),
            value: fc.constant(1),
            mode: fc.oneof(fc.constantFrom('append', 'replace'), wrongValue),
            tags: fc.oneof(fc.array(nastyString, { maxLength: 6 }), wrongValue),
            meta: fc.oneof(fc.record({ by: nastyString }), wrongValue),
          },
          { requiredKeys: [] },
        ),
      ),
    )
    .map(([t, m]) => ({ value: { t, m }, how: `message of ${t}` })),
  // The envelope's own fields garbled.
  fc
    .record(
      {
        t: fc.oneof(
          fc.constantFrom('put', 'get', '$mail', '$x', '', 'toString', '__proto__'),
          nastyString,
          wrongValue,
        ),
        m: fc.oneof(fc.constant(validPut), wrongValue),
        d: fc.oneof(fc.constantFrom(0, -1, 1e308, Date.now() + 60_000), wrongValue),
        s: fc.oneof(fc.constantFrom('a/b', 'fuzz-target/x', '/', '', 'no-slash'), wrongValue),
        i: fc.oneof(fc.constant(1), wrongValue),
      },
      { requiredKeys: ['t'] },
    )
    .map((value) => ({ value, how: 'envelope fields' })),
  fc.jsonValue({ maxDepth: 4 }).map((value) => ({ value, how: 'random JSON' })),
);

const wireCase: fc.Arbitrary<WireCase> = fc
  .record({
    body: fc.oneof(
      { arbitrary: envelope.map(({ value, how }) => ({ payload: encode(value), how })), weight: 6 },
      {
        arbitrary: fc
          .uint8Array({ maxLength: 512 })
          .map((payload) => ({ payload, how: 'random bytes' })),
        weight: 1,
      },
      {
        arbitrary: fc
          .string({ maxLength: 200 })
          .map((s) => ({ payload: Buffer.from(s), how: 'random text' })),
        weight: 1,
      },
      {
        arbitrary: fc.integer({ min: 100_000, max: 1_200_000 }).map((n) => ({
          payload: encode({ t: 'put', m: { key: 'k'.repeat(n), value: 1 } }),
          how: `${n}-char key`,
        })),
        weight: 1,
      },
    ),
    headers: fc.array(
      fc.tuple(
        fc.oneof(
          fc.constantFrom('Troupe-Error-Code', 'Troupe-Deadline', 'Troupe-Sender', 'Nats-Msg-Id'),
          fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,20}$/),
        ),
        fc.stringMatching(/^[ -~]{0,40}$/),
      ),
      { maxLength: 3 },
    ),
    ask: fc.boolean(),
  })
  .map(({ body, headers, ask }) => ({ ...body, headers, ask }));

/**
 * (c) Raw messages on an actor's subject at a real actor host (nats-server from the testkit):
 * asks must be answered with a reply or an error naming the field (`put.value`, `payload`,
 * `type`); tells are dropped; either way the actor answers a valid ask afterwards.
 */
export const actorWireTarget: FuzzTarget<WireCase> = {
  name: 'actor-wire',
  description: 'raw payloads on an actor subject at a real actor host over nats-server',
  async start() {
    const server = await startNatsServer();
    const cluster = randomClusterName();
    const system = await ActorSystem.start({ cluster, servers: server.url, hosting: [FuzzActor] });
    const ref = system.ref(FuzzActor, 'a1');
    await ref.ask('get', {}); // activates it: its subject now has a live subscriber
    const nc: NatsConnection = system.nc;
    const subject = actorSubject(cluster, ref.address);
    return {
      arbitrary: wireCase,
      async run(c) {
        const h = natsHeaders();
        for (const [k, v] of c.headers) h.append(k, v);
        // Larger than the server's max_payload: the client refuses to send it, nothing to judge.
        if (c.payload.byteLength + 1_024 > nc.info!.max_payload) return {};
        if (!c.ask) {
          nc.publish(subject, c.payload, { headers: h });
          return {};
        }
        let reply;
        // An ask whose deadline `d` has passed is dropped unanswered: its asker has given up.
        const expired = deadlineOf(c.payload) <= Date.now();
        try {
          reply = await nc.request(subject, c.payload, {
            timeout: expired ? 300 : 5_000,
            headers: h,
          });
        } catch (err) {
          if (expired) return {};
          return { wrong: `${c.how}: the ask got no answer (${(err as Error).message})` };
        }
        const error = decodeErrorHeaders(reply.headers);
        if (error === undefined) return {};
        const wrong = judgeError(error, {
          alsoAllowed: ['TIMEOUT'], // an envelope whose deadline `d` has passed
          fieldPrefix: ['put', 'get', 'payload', 'type', 'message', 'envelope'],
        });
        return wrong ? { wrong: `${c.how}: ${wrong}` } : {};
      },
      async checkValid() {
        try {
          await ref.ask('put', validPut, { timeoutMs: 5_000 });
          return undefined;
        } catch (err) {
          return (err as Error).message;
        }
      },
      async stop() {
        await system.shutdown({ graceMs: 1_000 });
        await server.stop();
      },
    };
  },
};
