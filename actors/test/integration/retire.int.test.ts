import { Kvm } from '@nats-io/kv';
import {
  inboxStreamName,
  inboxSubject,
  kvBucketName,
  type ActorAddress,
  type TroupeError,
} from '@troupe/proto';
import { randomClusterName, startNatsServer, type NatsServerHandle } from '@troupe/testkit';
import { z } from 'zod';
import { defineActor } from '../../src/actor-definition';
import { ActorSystem } from '../../src/actor-system';
import { retireActor } from '../../src/retire';

// A finished job's task actors and sandboxes are garbage: retiring one deletes its directory
// entry, state and inbox without leaving a marker (nats-server keeps per-subject state for every
// subject that still has a message, and nothing deleted them: the long soak's NATS growth).

const Tally = defineActor({
  kind: 'tally',
  state: z.object({ n: z.number() }),
  initialState: () => ({ n: 0 }),
  messages: { add: z.object({ by: z.number() }), get: z.object({}) },
  handlers: {
    add: (_ctx, msg, s) => ({ state: { n: s.n + msg.by }, reply: s.n + msg.by }),
    get: (_ctx, _msg, s) => ({ reply: s.n }),
  },
  retireWithJob: true,
  idleTimeoutMs: 60_000,
});

let server: NatsServerHandle;
let system: ActorSystem;
let cluster: string;

beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});
beforeEach(async () => {
  cluster = randomClusterName();
  system = await ActorSystem.start({ cluster, servers: server.url, hosting: [Tally] });
});
afterEach(async () => {
  await system.shutdown({ graceMs: 1_000 });
});

/** Messages stored for `addr` in its directory entry, state record and inbox. */
async function stored(addr: ActorAddress): Promise<{ dir: number; state: number; inbox: number }> {
  const kvm = new Kvm(system.nc);
  const count = async (stream: string, subject: string) => {
    const info = await system.jsm.streams.info(stream, { subjects_filter: subject });
    return Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
  };
  const kvCount = async (bucket: 'directory' | 'state') => {
    const kv = await kvm.open(kvBucketName(cluster, bucket));
    const status = await kv.status();
    return count(status.streamInfo.config.name, `$KV.${status.bucket}.${addr.kind}.${addr.id}`);
  };
  return {
    dir: await kvCount('directory'),
    state: await kvCount('state'),
    inbox: await count(inboxStreamName(cluster), inboxSubject(cluster, addr)),
  };
}

test('retires a sleeping actor: entry, state and inbox leave nothing, and the address starts anew', async () => {
  const ref = system.ref(Tally, 't1').withHints({ jobId: 'job-a' });
  const other = system.ref(Tally, 't1b').withHints({ jobId: 'job-a' });
  await other.post('add', { by: 7 });
  await ref.post('add', { by: 2 });
  expect(await ref.ask('add', { by: 3 })).toBe(5);
  await system.deactivate(ref.address);
  const { entry } = await system.directory.get(ref.address);
  // A sleeping actor still names its job and that it retires with it.
  expect(entry).toMatchObject({ state: 'SLEEPING', jobId: 'job-a', retireWithJob: true });
  expect(await stored(ref.address)).toEqual({ dir: 1, state: 1, inbox: 1 });

  expect(await retireActor(system, ref.address)).toBe('retired');
  expect(await stored(ref.address)).toEqual({ dir: 0, state: 0, inbox: 0 });
  // Only its own: another actor's records are untouched.
  expect(await stored(other.address)).toEqual({ dir: 1, state: 1, inbox: 1 });
  expect(await other.ask('get', {})).toBe(7);
  expect(await retireActor(system, ref.address)).toBe('absent');
  // Unknown now: a message starts it from its initial state at epoch 1.
  expect(await ref.ask('add', { by: 1 })).toBe(1);
  expect((await system.directory.get(ref.address)).entry.epoch).toBe(1);
});

test('leaves a live actor alone', async () => {
  const ref = system.ref(Tally, 't2').withHints({ jobId: 'job-b' });
  expect(await ref.ask('add', { by: 4 })).toBe(4);
  expect(await retireActor(system, ref.address)).toBe('live');
  expect(await ref.ask('add', { by: 1 })).toBe(5);
  expect(await stored(ref.address)).toMatchObject({ dir: 1, state: 1 });
});

test('an actor being retired is fenced: its activation is refused, not started', async () => {
  const ref = system.ref(Tally, 't3').withHints({ jobId: 'job-c' });
  expect(await ref.ask('add', { by: 1 })).toBe(1);
  await system.deactivate(ref.address);
  // The first step of a retirement: the entry STOPPED (retired) by compare-and-set.
  const { entry, revision } = await system.directory.get(ref.address);
  await system.directory.compareAndSet(ref.address, revision, {
    ...entry,
    state: 'STOPPED',
    reason: 'retired',
  });
  const err = (await ref.ask('get', {}).catch((e: unknown) => e)) as TroupeError;
  expect(err).toMatchObject({ code: 'UNAVAILABLE', retryable: false });
  expect(err.message).toContain('is STOPPED: retired');
  // The retirement then finishes from the STOPPED entry.
  expect(await retireActor(system, ref.address)).toBe('retired');
  expect(await stored(ref.address)).toEqual({ dir: 0, state: 0, inbox: 0 });
});

test('Directory.remove spares an entry written after the revision it was given', async () => {
  const addr = { kind: 'tally', id: 't4' };
  const first = await system.directory.compareAndSet(addr, 0, {
    state: 'SLEEPING',
    epoch: 1,
    updatedAtMs: 1,
  });
  const second = await system.directory.compareAndSet(addr, first!, {
    state: 'SLEEPING',
    epoch: 2,
    updatedAtMs: 2,
  });
  expect(second).toBeDefined();
  await system.directory.remove(addr, first!);
  const after = await system.directory.get(addr);
  expect(after).toEqual({ entry: expect.objectContaining({ epoch: 2 }), revision: second });
  await system.directory.remove(addr, second!);
  expect((await system.directory.get(addr)).revision).toBe(0);
});
