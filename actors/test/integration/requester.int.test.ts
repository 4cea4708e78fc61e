import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startNatsServer, type NatsServerHandle } from '@troupe/testkit';
import { isNatsTimeout } from '../../src/internal/nats-errors';
import { NO_RESPONDERS, Requester } from '../../src/internal/requester';

let server: NatsServerHandle;
let nc: NatsConnection;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
});
afterAll(async () => {
  await nc.close();
  await server.stop();
});

const bytes = (s: string) => new TextEncoder().encode(s);

test('no subscriber: resolves NO_RESPONDERS instead of throwing', async () => {
  const r = new Requester(nc);
  await expect(r.request('nobody.here', bytes('x'), { timeoutMs: 5_000 })).resolves.toBe(
    NO_RESPONDERS,
  );
});

test('concurrent requests each get their own reply', async () => {
  const sub = nc.subscribe('echo.*', {
    callback: (_err, msg) => {
      msg.respond(bytes(`${msg.subject}:${msg.string()}`));
    },
  });
  try {
    const r = new Requester(nc);
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        r.request(`echo.${i % 7}`, bytes(String(i)), { timeoutMs: 10_000 }),
      ),
    );
    replies.forEach((reply, i) => {
      expect(reply).not.toBe(NO_RESPONDERS);
      if (reply !== NO_RESPONDERS) expect(reply.string()).toBe(`echo.${i % 7}:${i}`);
    });
  } finally {
    sub.unsubscribe();
  }
});

test('a subscriber that never answers: rejects with a NATS timeout after timeoutMs', async () => {
  const sub = nc.subscribe('silent');
  try {
    const r = new Requester(nc);
    const started = Date.now();
    const err: unknown = await r.request('silent', bytes('x'), { timeoutMs: 300 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isNatsTimeout(err)).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  } finally {
    sub.unsubscribe();
  }
});
