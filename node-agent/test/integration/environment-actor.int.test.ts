import { environmentRef, ImageManager } from '@troupe/node-agent';
import { ensureDocker, startNatsServer, waitFor, type NatsServerHandle } from '@troupe/testkit';
import { TestCluster } from '@troupe/test-cluster';
import { PASSIVATE_QUIET_MS } from '../../src/internal/actor-support';
import { leftovers } from './helpers';

// Building the desktop image the first time takes minutes (apt); later runs find it cached.
jest.setTimeout(900_000);

let server: NatsServerHandle;
let c: TestCluster;
beforeAll(async () => {
  const docker = await ensureDocker();
  await new ImageManager({ docker }).ensure('desktop');
  server = await startNatsServer();
  c = await TestCluster.start({ nats: server, docker: true, actors: true });
  await c.startNodeAgent({
    hostId: 'env-agent',
    slots: { sandbox: 1, evaluator: 1, environment: 1 },
  });
});
afterAll(async () => {
  await c?.stop();
  await server?.stop();
});

// A destroyed environment's activation kept its slot for the quiet period (500 ms) of
// activations that never held a container, as sandboxes did before; with one environment slot,
// the next environment of a task waited that long.
test('a destroyed environment gives its slot back as soon as the destroy is over', async () => {
  const env = environmentRef(c.actors, 'env-destroyed');
  const created = await env.ask('create', { spec: {} }, { timeoutMs: 180_000 });
  expect(created).toMatchObject({ status: 'ready', kind: 'desktop' });
  expect((await leftovers(c.docker, c.cluster)).containers).toHaveLength(1);

  await env.ask('destroy', {}, { timeoutMs: 60_000 });
  const destroyedAt = performance.now();
  await waitFor(
    async () =>
      (await c.actors.directory.get({ kind: 'environment', id: 'env-destroyed' })).entry.state ===
      'SLEEPING',
    { timeoutMs: 10_000, intervalMs: 10, message: 'env-destroyed passivated after destroy' },
  );
  expect(performance.now() - destroyedAt).toBeLessThan(PASSIVATE_QUIET_MS * 0.9);
  expect(await leftovers(c.docker, c.cluster)).toEqual({ containers: [], volumes: [] });
  expect(await env.ask('status', {})).toMatchObject({ status: 'destroyed' });
});
