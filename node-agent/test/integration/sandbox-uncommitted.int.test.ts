import { StateStore } from '@troupe/actors';
import { sandboxRef, TroupeLabel } from '@troupe/node-agent';
import { type ActorAddress } from '@troupe/proto';
import { waitFor } from '@troupe/testkit';
import { TestCluster } from '@troupe/test-cluster';
import { dockerFixture, type DockerFixture, rejection } from './helpers';

// A `create` whose turn does not commit (the state store timed out while a NATS server
// restarted: chaos seed 8004) leaves a container no state names. The activation that made it
// must still remove it: on `destroy` (the task's retry destroys its earlier sandboxes) and
// before a `create` asked again makes another.

jest.setTimeout(180_000);

let c: TestCluster;
let fx: DockerFixture;

beforeAll(async () => {
  fx = await dockerFixture();
  c = await TestCluster.start({ cluster: fx.cluster, docker: true, actors: true });
  await c.startNodeAgent({ hostId: 'uncommitted-agent', slots: { sandbox: 4 } });
});

afterAll(async () => {
  await c?.stop();
});

afterEach(() => {
  jest.restoreAllMocks();
});

/** Fails the next commit of `id`'s state that records it `ready` (what `create` commits). */
function failNextReadyCommit(id: string): { failed: () => number } {
  let failed = 0;
  const real = StateStore.prototype.commitEncoded;
  jest.spyOn(StateStore.prototype, 'commitEncoded').mockImplementation(async function (
    this: StateStore,
    addr: ActorAddress,
    revision: number,
    data: Uint8Array,
  ) {
    if (
      failed === 0 &&
      addr.id === id &&
      Buffer.from(data).toString().includes('"status":"ready"')
    ) {
      failed++;
      throw new Error('injected: the state store timed out');
    }
    return real.call(this, addr, revision, data);
  });
  return { failed: () => failed };
}

async function containersOf(id: string): Promise<string[]> {
  const list = await fx.docker.listContainers({
    all: true,
    filters: { label: [`${TroupeLabel.ACTOR}=sandbox/${id}`] },
  });
  return list.map((x) => x.Id);
}

const spec = () => ({ image: fx.busybox });

test('destroy removes the container of a create that did not commit', async () => {
  const id = 'uncommitted-destroy';
  const store = failNextReadyCommit(id);
  const sb = sandboxRef(c.actors, id);
  // The turn fails after the container exists: no reply, the ask times out.
  const err = await rejection(sb.ask('create', { spec: spec() }, { timeoutMs: 4_000 }));
  expect(err).toBeInstanceOf(Error);
  expect(store.failed()).toBe(1);
  expect(await containersOf(id)).toHaveLength(1);

  // The state still says `new`: nothing to read, but the container goes with the destroy.
  const status = await sb.ask('status', {}, { timeoutMs: 30_000 });
  expect(status.status).toBe('new');
  await sb.ask('destroy', {}, { timeoutMs: 30_000 });
  expect(await containersOf(id)).toEqual([]);
});

test('a create asked again replaces the uncommitted container instead of adding one', async () => {
  const id = 'uncommitted-create';
  const store = failNextReadyCommit(id);
  const sb = sandboxRef(c.actors, id);
  await rejection(sb.ask('create', { spec: spec() }, { timeoutMs: 4_000 }));
  expect(store.failed()).toBe(1);
  const [first] = await containersOf(id);
  expect(first).toBeDefined();

  const created = await sb.ask('create', { spec: spec() }, { timeoutMs: 60_000 });
  expect(created.status).toBe('ready');
  await waitFor(async () => (await containersOf(id)).length === 1, {
    timeoutMs: 30_000,
    message: 'one container for the sandbox',
  });
  expect(await containersOf(id)).toEqual([created.metadata.containerId]);
  expect(created.metadata.containerId).not.toBe(first);
  await sb.ask('destroy', {}, { timeoutMs: 30_000 });
  expect(await containersOf(id)).toEqual([]);
});
