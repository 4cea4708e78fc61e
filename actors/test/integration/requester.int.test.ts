import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { startNatsServer, type NatsServerHandle } from '@troupe/testkit';
import { isNatsTimeout } from '../../src/internal/nats-errors';
import { WORKING_HEADER } from '../../src/internal/ask-keepalive';
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

// A request in flight when its server goes away has lost its answer (chaos: every NATS server
// restart held the inbox reads in flight for their whole 5 s timeout). A read marked
// `resendOnReconnect` is published again when the connection is back.
test('requests waiting when the connection closes fail at once, leaving no timer behind', async () => {
  const own = await connect({ servers: server.url });
  const sub = nc.subscribe('silent.close');
  try {
    await nc.flush();
    const r = new Requester(own);
    const started = Date.now();
    const waiting = Array.from({ length: 3 }, () =>
      r
        .request('silent.close', bytes('x'), {
          timeoutMs: 60_000,
          liveness: { silenceMs: 30_000, fromStart: true },
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        ),
    );
    await own.flush();
    await own.close();
    for (const err of await Promise.all(waiting)) {
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).name).toBe('ClosedConnectionError');
    }
    expect(Date.now() - started).toBeLessThan(5_000);
  } finally {
    sub.unsubscribe();
  }
});

test('a read in flight when the server restarts is sent again after the reconnect', async () => {
  const own = await startNatsServer();
  const conn = await connect({ servers: own.url, maxReconnectAttempts: -1, reconnectTimeWait: 50 });
  try {
    const seen: string[] = [];
    let restarted: Promise<void> | undefined;
    // The responder takes the first request and loses it with the server; it answers the next.
    conn.subscribe('read.one', {
      callback: (_err, msg) => {
        seen.push(msg.string());
        if (seen.length === 1) restarted = own.restart();
        else msg.respond(bytes(`answer ${seen.length}`));
      },
    });
    await conn.flush();
    const r = new Requester(conn);
    const started = Date.now();
    const reply = await r.request('read.one', bytes('q'), {
      timeoutMs: 20_000,
      resendOnReconnect: true,
    });
    await restarted;
    expect(reply).not.toBe(NO_RESPONDERS);
    expect(reply === NO_RESPONDERS ? '' : reply.string()).toBe('answer 2');
    expect(seen).toEqual(['q', 'q']);
    expect(Date.now() - started).toBeLessThan(10_000);
  } finally {
    await conn.close();
    await own.stop();
  }
});

test('a request not marked to be sent again is not, and waits out its timeout', async () => {
  const own = await startNatsServer();
  const conn = await connect({ servers: own.url, maxReconnectAttempts: -1, reconnectTimeWait: 50 });
  try {
    let restarted: Promise<void> | undefined;
    // It would answer a second copy: an ask (which may not run twice) is never sent again.
    conn.subscribe('ask.one', {
      callback: (_err, msg) => {
        if (restarted) msg.respond(bytes('ran twice'));
        else restarted = own.restart();
      },
    });
    await conn.flush();
    const r = new Requester(conn);
    const err = await r
      .request('ask.one', bytes('q'), { timeoutMs: 3_000 })
      .catch((e: unknown) => e);
    await restarted;
    expect(isNatsTimeout(err)).toBe(true);
  } finally {
    await conn.close();
    await own.stop();
  }
});

// A direct get sent while its stream has no leader (servers electing one after a restart) is
// dropped, not answered late (chaos run 21: inbox reads waited out their 5 s). A read marked
// `resendEveryMs` is published again while no answer comes, within the same deadline.
test('a read not answered is asked again every resendEveryMs until answered', async () => {
  const seen: number[] = [];
  const sub = nc.subscribe('read.dropped', {
    callback: (_err, msg) => {
      seen.push(Date.now());
      // The first two copies are dropped, as by a stream without a leader.
      if (seen.length === 3) msg.respond(bytes(`answer ${seen.length}`));
    },
  });
  try {
    await nc.flush();
    const r = new Requester(nc);
    const started = Date.now();
    const reply = await r.request('read.dropped', bytes('q'), {
      timeoutMs: 10_000,
      resendOnReconnect: true,
      resendEveryMs: 200,
    });
    expect(reply === NO_RESPONDERS ? '' : reply.string()).toBe('answer 3');
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(seen[1]! - seen[0]!).toBeGreaterThanOrEqual(150);
    // Answered: no copy is sent after the answer.
    await r.request('read.dropped', bytes('q'), { timeoutMs: 300 }).catch(() => undefined);
    expect(seen).toHaveLength(4);
  } finally {
    sub.unsubscribe();
  }
});

// An activation request is sent again until the host is heard from: its first sign of life says
// it has the request, and no copy follows (a host starting a slow activation is not asked twice
// a second).
test('a sign of life from the responder stops the copies', async () => {
  let copies = 0;
  const sub = nc.subscribe('slow.start', {
    callback: (_err, msg) => {
      copies++;
      const h = natsHeaders();
      h.set(WORKING_HEADER, '1');
      msg.respond(new Uint8Array(), { headers: h });
      setTimeout(() => msg.respond(bytes('started')), 1_000);
    },
  });
  try {
    await nc.flush();
    const r = new Requester(nc);
    const reply = await r.request('slow.start', bytes('q'), {
      timeoutMs: 10_000,
      liveness: { silenceMs: 4_000, fromStart: true },
      resendOnReconnect: true,
      resendEveryMs: 200,
    });
    expect(reply === NO_RESPONDERS ? '' : reply.string()).toBe('started');
    expect(copies).toBe(1);
  } finally {
    sub.unsubscribe();
  }
});
