import { sandboxRef } from '@troupe/node-agent';
import { startNatsServer, waitFor, type NatsServerHandle } from '@troupe/testkit';
import { TestCluster } from '@troupe/test-cluster';
import { dockerFixture, type DockerFixture, leftovers, rejection } from './helpers';

let server: NatsServerHandle;
let c: TestCluster;
let fx: DockerFixture;
beforeAll(async () => {
  server = await startNatsServer();
  fx = await dockerFixture();
  c = await TestCluster.start({ nats: server, cluster: fx.cluster, docker: true, actors: true });
});
afterAll(async () => {
  await c.stop();
  await server.stop();
});

test('with 2 sandbox slots a third sandbox waits for a slot, fails at its deadline, and gets one after a destroy', async () => {
  const agent = await c.startNodeAgent({ hostId: 'small', slots: { sandbox: 2, evaluator: 1 } });
  const spec = { image: fx.busybox };
  const [a, b, third] = ['cap-a', 'cap-b', 'cap-c'].map((id) => sandboxRef(c.actors, id));
  await a!.ask('create', { spec }, { timeoutMs: 60_000 });
  await b!.ask('create', { spec }, { timeoutMs: 60_000 });

  // No slot: the coordinator queues the activation until the ask's deadline.
  const refused = await rejection(third!.ask('create', { spec }, { timeoutMs: 1_500 }));
  // The ask's own deadline usually fires first (TIMEOUT); the coordinator's refusal at the same
  // deadline is UNAVAILABLE. Both are retryable.
  expect(['UNAVAILABLE', 'TIMEOUT']).toContain(refused.code);
  expect(refused.retryable).toBe(true);
  expect(agent.system.activationCount).toBe(2);

  // A patient caller waits in the queue and gets the slot a destroy frees.
  const pending = third!.ask('create', { spec }, { timeoutMs: 60_000 });
  await waitFor(() => c.coordinator.placement?.queueDepth()['sandbox'] === 1, {
    timeoutMs: 10_000,
    message: 'the third activation queued',
  });
  expect((await leftovers(fx.docker, c.cluster)).containers).toHaveLength(2);
  await a!.ask('destroy', {});
  const created = await pending;
  expect(created.status).toBe('ready');
  expect((await leftovers(fx.docker, c.cluster)).containers).toHaveLength(2);
  expect(agent.system.activationCount).toBe(2);

  await b!.ask('destroy', {});
  await third!.ask('destroy', {});
  expect(await leftovers(fx.docker, c.cluster)).toEqual({ containers: [], volumes: [] });
});
