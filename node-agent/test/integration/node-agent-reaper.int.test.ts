import { sandboxRef, TroupeLabel } from '@troupe/node-agent';
import { startNatsServer, waitFor, type NatsServerHandle } from '@troupe/testkit';
import { TestCluster } from '@troupe/test-cluster';
import { dockerFixture, type DockerFixture, leftovers } from './helpers';

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

test('warm pools serve matching creates; periodic sweeps keep live and pooled sandboxes, reap orphans', async () => {
  const agent = await c.startNodeAgent({
    hostId: 'pooled',
    slots: { sandbox: 3, evaluator: 1 },
    warmPools: [{ image: fx.busybox, size: 1 }],
    // Old enough to judge after 2 s (Docker reports creation times in whole seconds).
    reaper: { intervalMs: 100, minAgeMs: 2_000 },
  });
  const pool = agent.pools[0]!;
  await pool.filled();

  // A create whose spec equals the pool's takes the pooled sandbox; its files are still written.
  const pooled = sandboxRef(c.actors, 'from-pool');
  const a = await pooled.ask('create', {
    spec: { image: fx.busybox, files: { 'x.txt': 'pooled' } },
  });
  expect(a.metadata.poolId).toBe(pool.id);
  expect((await pooled.ask('exec', { cmd: ['cat', 'x.txt'] })).stdout).toBe('pooled');
  // Another spec does not match the pool.
  const own = sandboxRef(c.actors, 'own');
  const b = await own.ask('create', { spec: { image: fx.busybox, memoryMb: 128 } });
  expect(b.metadata.poolId).toBeUndefined();
  await pool.filled();

  // An orphan on this host: labelled for a sandbox actor that is not live here.
  const orphan = await fx.backend.create({
    image: fx.busybox,
    labels: { cluster: c.cluster, host: 'pooled', actor: 'sandbox/ghost' },
  });
  // Another host's object is never touched.
  const foreign = await fx.backend.create({
    image: fx.busybox,
    labels: { cluster: c.cluster, host: 'elsewhere', actor: 'sandbox/ghost' },
  });
  const orphanId = orphan.metadata().containerId!;
  await waitFor(
    async () => !(await leftovers(fx.docker, c.cluster)).containers.includes(orphanId),
    { timeoutMs: 10_000, message: 'the orphan reaped' },
  );
  // The sweep that took the orphan judged everything older and kept it: the live sandboxes (the
  // directory says they live on this incarnation) and the pool's (its id is live). The other
  // host's object is never looked at.
  const kept = await fx.docker.listContainers({
    all: true,
    filters: { label: [`${TroupeLabel.CLUSTER}=${c.cluster}`] },
  });
  const pooledIds = kept.filter((k) => k.Labels[TroupeLabel.POOL] === pool.id).map((k) => k.Id);
  expect(pooledIds).toHaveLength(2); // the one handed out and the refill
  expect(pooledIds).toContain(a.metadata.containerId);
  expect(kept.map((k) => k.Id).sort()).toEqual(
    [...pooledIds, b.metadata.containerId!, foreign.metadata().containerId!].sort(),
  );
  expect((await own.ask('exec', { cmd: ['echo', 'still here'] })).stdout).toBe('still here\n');

  await pooled.ask('destroy', {});
  await own.ask('destroy', {});
  await foreign.destroy();
  await agent.stop();
  expect(await leftovers(fx.docker, c.cluster)).toEqual({ containers: [], volumes: [] });
});
