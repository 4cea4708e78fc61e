import { startNatsServer, stopProcess, timed, type NatsServerHandle } from '@troupe/testkit';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { ErrorReason, hasReason } from '@troupe/proto';
import { KvWriter } from '../../src/kv-writer';
import { isWrongLastSequence } from '../../src/internal/kv-errors';
import { isTransientNatsError } from '../../src/internal/nats-errors';
import { requesterOf } from '../../src/internal/requester';

// The KvWriter replaces nats.js' kv.put/update/create on the hot paths (state commits, directory
// writes, job records). Each case checks it against what the bucket itself then holds, and the
// errors against the predicates the callers test them with.

let server: NatsServerHandle;
let nc: NatsConnection;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

test('put, update and create write what kv.get reads, at the revisions they return', async () => {
  const kv = await new Kvm(nc).create('writer_semantics', { history: 1 });
  const w = new KvWriter(nc, kv);

  const r1 = await w.put('a.b', 'one');
  expect((await kv.get('a.b'))?.string()).toBe('one');
  expect((await kv.get('a.b'))?.revision).toBe(r1);

  // Compare-and-set: the current revision wins, a stale one is refused as nats.js refuses it.
  const r2 = await w.update('a.b', new TextEncoder().encode('two'), r1);
  expect(r2).toBeGreaterThan(r1);
  const stale = await w.update('a.b', 'three', r1).catch((e: unknown) => e);
  expect(isWrongLastSequence(stale)).toBe(true);
  expect(isTransientNatsError(stale)).toBe(false);
  expect((await kv.get('a.b'))?.string()).toBe('two');

  // previousSeq 0: only a key with no entry.
  const fresh = await w.put('fresh', 'x', { previousSeq: 0 });
  expect((await kv.get('fresh'))?.revision).toBe(fresh);
  expect(
    isWrongLastSequence(await w.put('fresh', 'y', { previousSeq: 0 }).catch((e: unknown) => e)),
  ).toBe(true);

  // create: a live value is refused; a deleted key (marker left) is written over.
  expect(isWrongLastSequence(await w.create('a.b', 'again').catch((e: unknown) => e))).toBe(true);
  await kv.delete('a.b');
  const r3 = await w.create('a.b', 'reborn');
  expect(await kv.get('a.b')).toMatchObject({ revision: r3, operation: 'PUT' });
  expect((await kv.get('a.b'))?.string()).toBe('reborn');

  // A key nats.js would refuse is refused before anything is sent.
  await expect(w.put('bad key', 'x')).rejects.toThrow(/invalid key/);
});

test('get reads what kv.get reads: a value, a delete marker, nothing', async () => {
  const kv = await new Kvm(nc).create('writer_reads', { history: 5 });
  const w = new KvWriter(nc, kv);
  expect(await w.get('never.written')).toBeNull();
  expect(await kv.get('never.written')).toBeNull();

  await w.put('k', 'one');
  const r2 = await w.put('k', 'two');
  const e = await w.get('k');
  expect(e).not.toBeNull();
  expect(e?.string()).toBe('two');
  expect(e?.revision).toBe(r2);
  expect(e?.operation).toBe('PUT');
  expect(e?.key).toBe('k');
  expect(e?.bucket).toBe('writer_reads');

  await kv.delete('k');
  const marker = await w.get('k');
  const theirs = await kv.get('k');
  expect(marker?.operation).toBe('DEL');
  expect(marker?.revision).toBe(theirs?.revision);
  expect(marker?.value.length).toBe(0);
  // A key that only shares a prefix is another key.
  await w.put('k2', 'other');
  expect((await w.get('k'))?.operation).toBe('DEL');
});

test('every writer of a connection shares its one requester', () => {
  expect(requesterOf(nc)).toBe(requesterOf(nc));
});

test('a write nobody answers fails at its timeout as a transient error', async () => {
  const kv = await new Kvm(nc).create('writer_outage', { history: 1 });
  const w = new KvWriter(nc, kv, 800);
  await w.put('k', 'before');
  await stopProcess(server.pid);
  let op;
  try {
    op = await timed(() => w.put('k', 'during'));
  } finally {
    process.kill(server.pid, 'SIGCONT');
  }
  expect((op.err as Error | undefined)?.name).toBe('TimeoutError');
  expect(isTransientNatsError(op.err)).toBe(true);
  expect(op.ms).toBeGreaterThanOrEqual(700);
  expect(op.ms).toBeLessThan(3_000);
  // The server answers again: so does the writer.
  const after = await w.put('k', 'after');
  expect(await kv.get('k')).toMatchObject({ revision: after });
});

test('a write or read on a bucket whose stream is gone is a store outage, not a refusal', async () => {
  const kv = await new Kvm(nc).create('writer_gone', { history: 1 });
  const w = new KvWriter(nc, kv);
  await new Kvm(nc).open('writer_gone').then((b) => b.destroy());
  const err = await w.put('k', 'v').catch((e: unknown) => e);
  expect(hasReason(err, ErrorReason.STORE_UNAVAILABLE)).toBe(true);
  expect(isTransientNatsError(err)).toBe(true);
  // So is a read (nobody answers it: it times out).
  const readErr = await w.get('k', { timeoutMs: 300 }).catch((e: unknown) => e);
  expect(readErr).toBeInstanceOf(Error);
  expect(isTransientNatsError(readErr)).toBe(true);
});
