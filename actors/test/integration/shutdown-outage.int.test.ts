import { randomClusterName, startNatsServer, waitFor } from '@troupe/testkit';
import { z } from 'zod';
import { defineActor } from '../../src/actor-definition';
import { ActorSystem } from '../../src/actor-system';

// Shutting down while the NATS server is away: draining the connection cannot finish (it fails
// "connection disconnected" or waits for a server that is gone). The system used to leave the
// connection open then, reconnecting forever — a process that shut down kept a live timer and
// socket (it kept a test run from exiting). Shutdown closes the connection whatever the drain
// does.

const Echo = defineActor({
  kind: 'echo',
  state: z.object({}),
  initialState: () => ({}),
  messages: { say: z.object({ text: z.string() }) },
  handlers: { say: (_ctx, msg) => ({ reply: msg.text }) },
});

test('shutdown while the NATS server is down closes the connection', async () => {
  const own = await startNatsServer();
  const system = await ActorSystem.start({
    cluster: randomClusterName(),
    servers: own.url,
    hosting: [Echo],
  });
  try {
    expect(await system.ref(Echo, 'e1').ask('say', { text: 'hi' }, { timeoutMs: 10_000 })).toBe(
      'hi',
    );
    const disconnected = (async () => {
      for await (const s of system.nc.status()) if (s.type === 'disconnect') return;
    })();
    await own.kill();
    await disconnected;
    await system.shutdown({ graceMs: 0 });
    await waitFor(() => system.nc.isClosed(), {
      timeoutMs: 5_000,
      message: 'the connection closed',
    });
  } finally {
    if (!system.nc.isClosed()) await system.nc.close();
    await own.stop();
  }
});
