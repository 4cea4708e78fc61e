import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { startNatsServer, type NatsServerHandle } from '@troupe/testkit';
import { Kvm } from '@nats-io/kv';
import { BUCKET_OPEN_ATTEMPT_MS, createKv, createObjectStore } from '../../src/buckets';
import { kvKeys } from '../../src/kv-keys';

let server: NatsServerHandle;
let conns: NatsConnection[];
beforeAll(async () => {
  server = await startNatsServer();
  conns = await Promise.all(Array.from({ length: 8 }, () => connect({ servers: server.url })));
});
afterAll(async () => {
  await Promise.all(conns.map((c) => c.close()));
  await server.stop();
});

// Eight processes opening one bucket at once, with options that differ (as a coordinator's and a
// node agent's may): the losers of the create race open the winner's bucket instead of failing
// with "stream name already in use with a different configuration".
test('createKv from many connections at once: every caller gets the one bucket', async () => {
  for (let round = 0; round < 5; round++) {
    const name = `race_kv_${round}`;
    const kvs = await Promise.all(
      conns.map((nc, i) => createKv(nc, name, { history: 1 + (i % 4) })),
    );
    await kvs[0]!.put('k', 'v');
    for (const kv of kvs) expect((await kv.get('k'))?.string()).toBe('v');
    const info = await (await jetstreamManager(conns[0]!)).streams.info(`KV_${name}`);
    expect([1, 2, 3, 4]).toContain(info.config.max_msgs_per_subject);
  }
});

test('createObjectStore from many connections at once: every caller gets the one store', async () => {
  for (let round = 0; round < 5; round++) {
    const name = `race_obj_${round}`;
    const stores = await Promise.all(
      conns.map((nc, i) => createObjectStore(nc, name, { description: `opener ${i}` })),
    );
    await stores[0]!.putBlob({ name: 'o' }, new Uint8Array([1, 2, 3]));
    for (const s of stores) expect(Array.from((await s.getBlob('o')) ?? [])).toEqual([1, 2, 3]);
  }
});

test('createKv passes on errors other than the create race', async () => {
  await expect(createKv(conns[0]!, 'bad name with spaces')).rejects.toThrow(/invalid bucket name/i);
});

test('kvKeys lists the keys matching a filter from the stream, deleted ones included', async () => {
  const kv = await createKv(conns[0]!, 'kv_keys', { history: 2 });
  // More keys than one page of a plain (unfiltered) stream info would carry, and nested tokens.
  for (let i = 0; i < 300; i++) await kv.put(`a.${i}`, 'v');
  await kv.put('b.x.y', 'v');
  await kv.put('b.z', 'v');
  await kv.put('b.z', 'w'); // two revisions, one key
  await kv.delete('a.7');
  const all = await kvKeys(kv);
  expect(all).toHaveLength(302);
  expect(new Set(all).size).toBe(302);
  expect(all).toEqual(expect.arrayContaining(['a.0', 'a.7', 'a.299', 'b.x.y', 'b.z']));
  expect((await kvKeys(kv, 'b.*')).sort()).toEqual(['b.z']);
  expect((await kvKeys(kv, 'b.>')).sort()).toEqual(['b.x.y', 'b.z']);
  expect(await kvKeys(kv, 'c.>')).toEqual([]);
  // What kv.keys() lists (live keys only) is what kvKeys lists minus the deleted one.
  const live: string[] = [];
  for await (const k of await kv.keys()) live.push(k);
  expect(live.sort()).toEqual(all.filter((k) => k !== 'a.7').sort());
});

// Chaos run 23 (seed 9302): a new leader coordinator's bucket opens after a NATS server's kill:
// the look-up found the stream led, then `create`'s own request was lost to a leader change and
// waited the JetStream API's 5 s. An attempt that takes longer than BUCKET_OPEN_ATTEMPT_MS is
// made again.
test('a bucket open whose requests are lost is tried again after 2 s, not 5 s', async () => {
  const nc = conns[0]!;
  await createKv(nc, 'lost_open');
  const create = Kvm.prototype.create;
  let calls = 0;
  // The first attempt's requests are lost: it never settles.
  const spy = jest.spyOn(Kvm.prototype, 'create').mockImplementation(function (this: Kvm, ...a) {
    calls++;
    return calls === 1 ? new Promise(() => undefined) : create.apply(this, a);
  });
  try {
    const started = Date.now();
    const kv = await createKv(nc, 'lost_open');
    const tookMs = Date.now() - started;
    await kv.put('k', 'v');
    expect((await kv.get('k'))?.string()).toBe('v');
    expect(calls).toBe(2);
    expect(tookMs).toBeGreaterThanOrEqual(BUCKET_OPEN_ATTEMPT_MS - 50);
    expect(tookMs).toBeLessThan(4_000);
  } finally {
    spy.mockRestore();
  }
});
