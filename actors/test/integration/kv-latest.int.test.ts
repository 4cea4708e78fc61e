import { startNatsServer, waitFor, type NatsServerHandle } from '@troupe/testkit';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Kvm, type KV } from '@nats-io/kv';
import { kvLatest } from '../../src/kv-latest';

// A job listing (client list-watch test, CI of cf527ad) lacked a job whose record its task actors
// kept rewriting while the listing read the bucket: nats-server 2.9's last-per-subject consumer
// loses keys overwritten during its pass. Here four writers overwrite keys of a history-1 bucket
// while passes run; every pass must hold every key once, none older than the pass's revision.

let server: NatsServerHandle;
let nc: NatsConnection;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

const KEYS = 40;
const keyOf = (i: number) => `job.k${String(i).padStart(3, '0')}`;

async function bucket(name: string): Promise<KV> {
  const kv = await new Kvm(nc).create(name, { history: 1 });
  for (let i = 0; i < KEYS; i++) await kv.put(keyOf(i), String(0));
  // Keys outside the filter, written too, must not appear.
  await kv.put('idem.x', 'other');
  return kv;
}

test('every key is read once, also while writers overwrite them', async () => {
  const kv = await bucket('latest_busy');
  let stop = false;
  const written = new Map<string, number>();
  const writers = [0, 1, 2, 3].map(async (w) => {
    for (let n = 1; !stop; n++) {
      const key = keyOf((n * 7 + w) % KEYS);
      const revision = await kv.put(key, String(n));
      written.set(key, Math.max(written.get(key) ?? 0, revision));
      if (n % 25 === 0) await kv.put('idem.x', String(n));
    }
  });
  const incomplete: string[] = [];
  try {
    for (let pass = 0; pass < 60; pass++) {
      const read = await kvLatest(kv, 'job.*', 10_000);
      if (!read) throw new Error(`pass ${pass} did not end within 10 s`);
      const keys = read.entries.map((e) => e.key);
      if (new Set(keys).size !== keys.length || keys.length !== KEYS) {
        incomplete.push(`pass ${pass}: ${keys.length} entries, ${new Set(keys).size} keys`);
      }
      expect(keys.filter((k) => !k.startsWith('job.'))).toEqual([]);
    }
  } finally {
    stop = true;
    await Promise.all(writers);
  }
  expect(incomplete).toEqual([]);
  expect(written.size).toBe(KEYS);
});

test("a listing and a watch from its revision end at every key's last value", async () => {
  const kv = await bucket('latest_watch');
  for (let round = 0; round < 10; round++) {
    // Writers busy during the pass, stopped as soon as it ends: a key the pass read older than
    // its revision says would not be written again, and the watch would never mend it.
    let stop = false;
    const writers = [0, 1, 2, 3].map(async (w) => {
      for (let n = 1; !stop; n++) await kv.put(keyOf((n * 11 + w + round) % KEYS), String(n));
    });
    const read = await kvLatest(kv, 'job.*', 10_000);
    stop = true;
    expect(read).toBeDefined();
    const seen = new Map<string, number>();
    for (const e of read!.entries) seen.set(e.key, e.revision);
    const watch = await kv.watch({ key: 'job.*', resumeFromRevision: read!.revision + 1 });
    const following = (async () => {
      for await (const e of watch) seen.set(e.key, Math.max(seen.get(e.key) ?? 0, e.revision));
    })();
    await Promise.all(writers);
    const last = new Map<string, number>();
    for (let i = 0; i < KEYS; i++) last.set(keyOf(i), (await kv.get(keyOf(i)))!.revision);
    try {
      await waitFor(() => [...last].every(([k, r]) => seen.get(k) === r), {
        timeoutMs: 10_000,
        message: `round ${round}: the watch brought every key to its last revision`,
      });
    } finally {
      watch.stop();
      await following;
    }
    expect(Object.fromEntries(seen)).toEqual(Object.fromEntries(last));
  }
});
