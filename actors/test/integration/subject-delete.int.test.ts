import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startNatsServer, type NatsServerHandle, waitFor } from '@troupe/testkit';
import { deleteSubjectMessages, removeKvKey } from '../../src/internal/subject-delete';

// Retirement deletes a finished job's keys while the placer watches the whole directory. It
// used a stream purge filtered to the key, and on nats-server 2.9 such a purge moves the
// delivery position of the stream's other consumers: the watch skipped entries of other keys
// written just before it (in the process soak, sandboxes going to sleep), and the placer held
// their slots for good. Deleting by sequence leaves consumers alone.

let server: NatsServerHandle;
let nc: NatsConnection;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
});
afterAll(async () => {
  await nc.close();
  await server.stop();
});

let serial = 0;
async function bucket(): Promise<KV> {
  return new Kvm(nc).create(`sd${++serial}`, { history: 1 });
}

test('deletes one subject, through a sequence, leaving other subjects and later messages', async () => {
  const kv = await bucket();
  await kv.put('a', '1');
  const through = await kv.put('b', '1');
  await kv.put('c', '1');
  const jsm = await jetstreamManager(nc);
  const stream = `KV_sd${serial}`;
  // No message of the subject at or below the sequence: nothing goes.
  expect(await deleteSubjectMessages(jsm, stream, `$KV.sd${serial}.c`, through)).toBe(0);
  expect((await kv.get('c'))?.string()).toBe('1');
  expect(await removeKvKey(kv, 'b', through)).toBe(1);
  expect(await kv.get('b')).toBeNull();
  // A write after the revision survives.
  const later = await kv.put('a', '2');
  expect(await removeKvKey(kv, 'a', later - 1)).toBe(0);
  expect((await kv.get('a'))?.string()).toBe('2');
  expect(await removeKvKey(kv, 'a')).toBe(1);
  expect(await kv.get('a')).toBeNull();
  // No marker: the stream keeps only c.
  const info = await jsm.streams.info(stream);
  expect(info.state.messages).toBe(1);
  expect(info.state.num_subjects).toBe(1);
});

test('deletes every message of a subject with many, oldest first, and only those', async () => {
  const jsm = await jetstreamManager(nc);
  const name = `MANY${++serial}`;
  await jsm.streams.add({ name, subjects: [`many${serial}.>`] });
  const js = jsm.jetstream();
  for (let i = 0; i < 30; i++) await js.publish(`many${serial}.${i % 3}`, String(i));
  expect(await deleteSubjectMessages(jsm, name, `many${serial}.1`)).toBe(10);
  const info = await jsm.streams.info(name, { subjects_filter: '>' });
  expect(info.state.messages).toBe(20);
  expect(Object.keys(info.state.subjects ?? {}).sort()).toEqual([
    `many${serial}.0`,
    `many${serial}.2`,
  ]);
});

test('a watcher of the bucket sees every write of other keys while keys are removed', async () => {
  const kv = await bucket();
  const seen = new Map<string, string>();
  const watcher = await kv.watch({ key: '>' });
  void (async () => {
    for await (const e of watcher) seen.set(e.key, e.operation === 'PUT' ? e.string() : 'DEL');
  })();
  // Like sandboxes that start and go to sleep while a finished job's ones are retired: each
  // lane writes IDLE then SLEEPING for its keys and retires the key it wrote 200 keys earlier
  // (STOPPED, then removed through that revision).
  const keys = 2_400;
  const lanes = 8;
  const retired = new Set<string>();
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      for (let i = lane; i < keys; i += lanes) {
        await kv.put(`sandbox.s${i}`, 'IDLE');
        await kv.put(`sandbox.s${i}`, 'SLEEPING');
        if (i >= 200) {
          const old = `sandbox.s${i - 200}`;
          const stopped = await kv.put(old, 'STOPPED');
          await removeKvKey(kv, old, stopped);
          retired.add(old);
        }
      }
    }),
  );
  const kept = Array.from({ length: keys }, (_, i) => `sandbox.s${i}`).filter(
    (k) => !retired.has(k),
  );
  expect(kept.length).toBe(200);
  // Every kept key's last write reaches the watcher (on the filtered purge, tens did not).
  await waitFor(() => kept.every((k) => seen.get(k) === 'SLEEPING'), {
    timeoutMs: 10_000,
    message: 'the watcher saw every kept key go to sleep',
  }).catch(() => undefined);
  watcher.stop();
  expect(kept.filter((k) => seen.get(k) !== 'SLEEPING')).toEqual([]);
});
