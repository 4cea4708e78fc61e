import { randomClusterName, startNatsServer, type NatsServerHandle } from '@troupe/testkit';
import { ActorSystem } from '../../src/actor-system';
import { ActivationEntry, type EntryHost } from '../../src/internal/activation-entry';
import { FencedError } from '../../src/state-store';

// An activation moves its own directory entry (IDLE → SLEEPING at passivation) by CAS on the
// revision of its own last write, without reading the entry first; a write by anyone else in
// between makes that CAS fail, and the entry is read and judged as before.

let server: NatsServerHandle;
let system: ActorSystem;
beforeAll(async () => {
  server = await startNatsServer();
  system = await ActorSystem.start({ cluster: randomClusterName(), servers: server.url });
});
afterAll(async () => {
  await system?.shutdown({ graceMs: 500 });
  await server?.stop();
});
afterEach(() => jest.restoreAllMocks());

function host(incarnation = 'inc-1'): EntryHost & { incarnation: string } {
  return { directory: system.directory, hostId: 'h1', incarnation };
}

test('a claimed entry is put to sleep from the claim’s revision, without a read', async () => {
  const addr = { kind: 'k', id: 'no-read' };
  const entry = new ActivationEntry(host(), addr, 1, 'j-1', true);
  expect(await entry.claimIdle(0)).toBe(true);
  const get = jest.spyOn(system.directory, 'get');
  await entry.mark(undefined, 'SLEEPING', 'idle');
  expect(get).not.toHaveBeenCalled();
  get.mockRestore();
  expect((await system.directory.get(addr)).entry).toMatchObject({
    state: 'SLEEPING',
    epoch: 1,
    jobId: 'j-1',
    retireWithJob: true,
    reason: 'idle',
  });
});

test('an entry another writer changed since is read: moved on, the activation is fenced', async () => {
  const addr = { kind: 'k', id: 'moved' };
  const entry = new ActivationEntry(host(), addr, 1, undefined);
  expect(await entry.claimIdle(0)).toBe(true);
  // A placer declared the host lost and another host took the actor at epoch 2.
  const { revision } = await system.directory.get(addr);
  await system.directory.compareAndSet(addr, revision, {
    state: 'IDLE',
    hostId: 'h2',
    epoch: 2,
    updatedAtMs: Date.now(),
  });
  const get = jest.spyOn(system.directory, 'get');
  await expect(entry.mark(undefined, 'SLEEPING')).rejects.toBeInstanceOf(FencedError);
  expect(get).toHaveBeenCalledTimes(1);
  expect((await system.directory.get(addr)).entry).toMatchObject({ hostId: 'h2', epoch: 2 });
});

test('a rewrite that keeps the entry ours (same host and epoch) is read and then written', async () => {
  const addr = { kind: 'k', id: 'touched' };
  const entry = new ActivationEntry(host(), addr, 1, undefined);
  expect(await entry.claimIdle(0)).toBe(true);
  const current = await system.directory.get(addr);
  await system.directory.compareAndSet(addr, current.revision, {
    ...current.entry,
    updatedAtMs: Date.now(),
  });
  const get = jest.spyOn(system.directory, 'get');
  await entry.mark(undefined, 'SLEEPING');
  expect(get).toHaveBeenCalledTimes(1);
  expect((await system.directory.get(addr)).entry).toMatchObject({ state: 'SLEEPING', epoch: 1 });
});

test('after its host registered again (a new incarnation), the entry is read and fenced', async () => {
  const addr = { kind: 'k', id: 'reincarnated' };
  const h = host('inc-1');
  const entry = new ActivationEntry(h, addr, 1, undefined);
  expect(await entry.claimIdle(0)).toBe(true);
  h.incarnation = 'inc-2';
  const get = jest.spyOn(system.directory, 'get');
  await expect(entry.mark(undefined, 'SLEEPING')).rejects.toBeInstanceOf(FencedError);
  expect(get).toHaveBeenCalledTimes(1);
  expect((await system.directory.get(addr)).entry).toMatchObject({
    state: 'IDLE',
    incarnation: 'inc-1',
  });
});
