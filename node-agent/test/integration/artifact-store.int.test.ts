import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { ArtifactStore } from '@troupe/node-agent';
import { randomClusterName, startNatsServer, type NatsServerHandle } from '@troupe/testkit';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { rejection, sha256 } from './helpers';

let server: NatsServerHandle;
let nc: NatsConnection;
let store: ArtifactStore;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  store = await ArtifactStore.open(nc, { cluster: randomClusterName() });
});
afterAll(async () => {
  await nc.drain();
  await server.stop();
});

test('put and get bytes and streams; info, exists, list by prefix, replace, delete', async () => {
  expect(store.bucket).toMatch(/^troupe_[a-z0-9-]+_artifacts$/);
  const small = Buffer.from('hello');
  const info = await store.put('jobs/j1/a.txt', small, {
    contentType: 'text/plain',
    meta: { jobId: 'j1' },
  });
  expect(info).toMatchObject({
    name: 'jobs/j1/a.txt',
    size: 5,
    digest: sha256(small),
    contentType: 'text/plain',
    meta: { jobId: 'j1' },
  });
  expect(Buffer.from(await store.get('jobs/j1/a.txt')).toString()).toBe('hello');
  expect(await store.exists('jobs/j1/a.txt')).toBe(true);
  expect(await store.exists('jobs/j1/none')).toBe(false);

  // Several chunks from a stream (the object store chunks at 128 KiB).
  const big = randomBytes(3 * 1024 * 1024 + 17);
  const parts = Array.from({ length: 7 }, (_, i) => big.subarray(i * 500_000, (i + 1) * 500_000));
  const bigInfo = await store.put('jobs/j1/big.bin', Readable.from(parts));
  expect(bigInfo).toMatchObject({ size: big.length, digest: sha256(big) });
  const { info: streamed, stream } = await store.getStream('jobs/j1/big.bin');
  expect(streamed.size).toBe(big.length);
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  expect(sha256(Buffer.concat(chunks))).toBe(sha256(big));
  const limited = await rejection(store.get('jobs/j1/big.bin', { maxBytes: 1024 }));
  expect(limited.code).toBe('INVALID_ARGUMENT');

  await store.put('jobs/j2/other.txt', Buffer.from('x'));
  expect((await store.list('jobs/j1/')).map((a) => a.name)).toEqual([
    'jobs/j1/a.txt',
    'jobs/j1/big.bin',
  ]);

  await store.put('jobs/j1/a.txt', Buffer.from('replaced'));
  expect(Buffer.from(await store.get('jobs/j1/a.txt')).toString()).toBe('replaced');

  expect(await store.delete('jobs/j1/a.txt')).toBe(true);
  expect(await store.delete('jobs/j1/a.txt')).toBe(false);
  expect(await store.exists('jobs/j1/a.txt')).toBe(false);
  const gone = await rejection(store.get('jobs/j1/a.txt'));
  expect(gone.code).toBe('NOT_FOUND');
  expect((await store.list('jobs/j1/')).map((a) => a.name)).toEqual(['jobs/j1/big.bin']);
});

test('bad names and reserved metadata are refused; an aborted upload leaves nothing', async () => {
  const bad = await rejection(store.put('../escape', Buffer.from('x')));
  expect(bad.code).toBe('INVALID_ARGUMENT');
  expect(bad.message).toMatch(/^`name`: /);
  const reserved = await rejection(
    store.put('a', Buffer.from('x'), { meta: { 'content-type': 'x' } }),
  );
  expect(reserved.message).toMatch(/`meta\.content-type`: is reserved/);

  const controller = new AbortController();
  async function* endless(): AsyncGenerator<Buffer> {
    for (let i = 0; ; i++) {
      if (i === 3) controller.abort();
      yield randomBytes(200_000);
    }
  }
  const aborted = await rejection(
    store.put('jobs/j3/partial.bin', Readable.from(endless()), { signal: controller.signal }),
  );
  expect(aborted.code).toBe('CANCELLED');
  expect(await store.exists('jobs/j3/partial.bin')).toBe(false);
});
