import { connect, type NatsConnection } from '@nats-io/transport-node';
import {
  type NatsServerHandle,
  randomClusterName,
  startNatsServer,
  waitFor,
} from '@troupe/testkit';
import { type TrajectoryEvent, TrajectoryEventType } from '../../src/agent/trajectory-event';
import { TrajectoryStore } from '../../src/agent/trajectory-store';

// waitForRunEnd against a real nats-server: the fast path is a core subscription, which loses what
// is published while its connection is away; the periodic read of the last stored event finds it.

let server: NatsServerHandle;
const connections: NatsConnection[] = [];
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  for (const nc of connections) await nc.close();
  await server.stop();
});

function runEnd(sessionId: string, runId: string, seq: number): TrajectoryEvent {
  return {
    sessionId,
    seq,
    epoch: 1,
    runId,
    atMs: Date.now(),
    type: TrajectoryEventType.RUN_END,
    data: { result: { runId, stopReason: 'FINISHED' } },
  };
}

test('waitForRunEnd: an end stored before the wait, one published during it, and one published while the waiter was disconnected', async () => {
  const cluster = randomClusterName();
  // The waiter comes back slowly after a server restart; the publisher at once.
  const waiterNc = await connect({ servers: server.url, reconnectTimeWait: 10_000 });
  const publisherNc = await connect({ servers: server.url, reconnectTimeWait: 50 });
  connections.push(waiterNc, publisherNc);
  const waiter = new TrajectoryStore({ connection: waiterNc, cluster });
  const publisher = new TrajectoryStore({ connection: publisherNc, cluster });

  await publisher.append(runEnd('s1', 'before', 1));
  await expect(waiter.waitForRunEnd('s1', 'before')).resolves.toEqual({
    runId: 'before',
    stopReason: 'FINISHED',
  });

  const during = waiter.waitForRunEnd('s1', 'during');
  await publisher.append(runEnd('s1', 'during', 2));
  await expect(during).resolves.toMatchObject({ runId: 'during' });

  const away = waiter.waitForRunEnd('s1', 'away', { recheckMs: 200 });
  const reconnected = { waiter: false, publisher: false };
  for (const [who, nc] of [
    ['waiter', waiterNc],
    ['publisher', publisherNc],
  ] as const) {
    void (async () => {
      for await (const s of nc.status()) if (s.type === 'reconnect') reconnected[who] = true;
    })();
  }
  await server.restart();
  await waitFor(() => reconnected.publisher, { timeoutMs: 10_000, message: 'publisher back' });
  // Published once the server is back (JetStream may need a moment), before the waiter returns.
  await waitFor(
    async () => {
      await publisher.append(runEnd('s1', 'away', 3));
      return true;
    },
    { timeoutMs: 15_000, message: 'run end stored after the restart' },
  );
  expect(reconnected.waiter).toBe(false); // so its subscription cannot have seen the end
  await expect(away).resolves.toMatchObject({ runId: 'away' });
  expect(reconnected.waiter).toBe(true);
});

test('waitForRunEnd stops at its signal with the abort reason', async () => {
  const nc = await connect({ servers: server.url });
  connections.push(nc);
  const store = new TrajectoryStore({ connection: nc, cluster: randomClusterName() });
  const controller = new AbortController();
  const waiting = store.waitForRunEnd('s2', 'never', { signal: controller.signal });
  controller.abort(new Error('user gave up'));
  await expect(waiting).rejects.toMatchObject({ code: 'CANCELLED' });
});
