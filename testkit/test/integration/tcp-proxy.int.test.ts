import { connect, type NatsConnection } from '@nats-io/transport-node';
import { type NatsServerHandle, startNatsServer, startTcpProxy, waitFor } from '@troupe/testkit';

let server: NatsServerHandle;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});

test('a client through the proxy is cut off on cut() and reconnects after restore()', async () => {
  const proxy = await startTcpProxy({ target: { port: server.port } });
  let nc: NatsConnection | undefined;
  try {
    nc = await connect({ servers: proxy.url, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
    const direct = await connect({ servers: server.url });
    const seen: string[] = [];
    const events: string[] = [];
    void (async () => {
      for await (const s of nc.status()) events.push(s.type);
    })();
    nc.subscribe('t.x', {
      callback: (_e, m) => {
        seen.push(m.string());
      },
    });
    await nc.flush();
    direct.publish('t.x', 'before');
    await waitFor(() => seen.includes('before'), { timeoutMs: 5_000 });

    proxy.cut();
    expect(proxy.isCut).toBe(true);
    await waitFor(() => events.includes('disconnect'), { timeoutMs: 5_000 });
    direct.publish('t.x', 'during');
    await direct.flush();
    // Reconnect attempts made while cut are refused: still not back after several of them.
    await waitFor(() => events.filter((e) => e === 'reconnecting').length >= 3, {
      timeoutMs: 5_000,
    });
    expect(events).not.toContain('reconnect');

    proxy.restore();
    await waitFor(() => events.includes('reconnect'), { timeoutMs: 5_000 });
    await nc.flush();
    direct.publish('t.x', 'after');
    await waitFor(() => seen.includes('after'), { timeoutMs: 5_000 });
    // What was published while the client was away never reached it (core NATS).
    expect(seen).toEqual(['before', 'after']);
    await direct.close();
  } finally {
    await nc?.close();
    await proxy.stop();
    await proxy.stop();
  }
});
