import { ActorSystem } from '@troupe/actors';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { BudgetLedger } from '../../src/budget/budget-ledger';
import { Coordinator } from '../../src/coordinator';

let server: NatsServerHandle;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});

test('the metrics endpoint reports leadership, hosts and budget per scope; bad config is refused', async () => {
  await expect(
    Coordinator.start({
      cluster: 'Bad Name',
      nats: { servers: server.url },
      metrics: { port: null },
    }),
  ).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
    message: expect.stringContaining('config.cluster') as string,
  });
  await expect(
    Coordinator.start({
      nats: { servers: server.url },
      leaseMs: 1_000,
      renewMs: 900,
      metrics: { port: null },
    }),
  ).rejects.toMatchObject({ message: expect.stringContaining('renewMs') as string });

  const cluster = randomClusterName();
  const coordinator = await Coordinator.start({
    cluster,
    nats: { servers: server.url },
    heartbeatMs: 200,
    metrics: { port: 0, host: '127.0.0.1' },
  });
  const client = await ActorSystem.start({ cluster, servers: server.url });
  try {
    await waitFor(() => coordinator.isLeader && coordinator.registry?.isAlive(coordinator.id), {
      timeoutMs: 10_000,
    });
    const ledger = new BudgetLedger(client);
    await ledger.setLimit('cluster', { usd: 5 });
    await ledger.reserve('cluster', { usd: 1.5, tokens: 10 }, { ttlMs: 60_000, holder: 'test' });
    const text = await waitFor(
      async () => {
        const body = await (
          await fetch(`http://127.0.0.1:${coordinator.metricsPort}/metrics`)
        ).text();
        return body.includes('troupe_budget') && body.includes('1.5') ? body : undefined;
      },
      { timeoutMs: 10_000 },
    );
    expect(text).toMatch(/^troupe_is_leader 1$/m);
    expect(text).toMatch(/^troupe_hosts\{state="ALIVE"\} 1$/m);
    expect(text).toMatch(/troupe_budget\w*\{[^}]*scope="cluster"[^}]*\} 1\.5/);
  } finally {
    await client.shutdown();
    await coordinator.stop();
  }
});
