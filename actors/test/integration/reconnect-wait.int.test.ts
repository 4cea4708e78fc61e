import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ActorSystem } from '@troupe/actors';
import { natsConnectionOptions } from '@troupe/proto';
import { randomClusterName, startNatsServer, waitFor } from '@troupe/testkit';

/** When `nc` next reports a reconnection (performance.now()), or undefined while it has not. */
function reconnectWatch(nc: NatsConnection): { at?: number } {
  const seen: { at?: number } = {};
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'reconnect' && seen.at === undefined) seen.at = performance.now();
    }
  })();
  return seen;
}

// Chaos run 9: a partitioned node agent reconnected 2 s after the heal, nats.js's default pause
// between attempts to one server; every process reconnected that late after a server restart.
test('Troupe processes reconnect within about half a second of their server answering', async () => {
  const server = await startNatsServer();
  // A server's connection (coordinator, node agent, agent host) and the runtime's own.
  const nc = await connect(natsConnectionOptions({ servers: server.url }));
  const system = await ActorSystem.start({
    cluster: randomClusterName(),
    servers: server.url,
    placement: 'none',
  });
  try {
    const watches = [reconnectWatch(nc), reconnectWatch(system.nc)];
    await server.restart();
    const back = performance.now();
    await waitFor(() => watches.every((w) => w.at !== undefined), {
      timeoutMs: 15_000,
      message: 'both connections reconnected',
    });
    for (const w of watches) {
      // The first attempt fails as the server stops; the next comes one pause (500 ms, plus
      // nats.js's jitter of up to 100 ms) later. With the 2 s default this was 1.5 s or more.
      expect(w.at! - back).toBeLessThan(1_200);
    }
  } finally {
    await system.shutdown();
    await nc.close();
    await server.stop();
  }
});
