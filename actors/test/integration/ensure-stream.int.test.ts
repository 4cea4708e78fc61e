import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { startNatsServer, type NatsServerHandle, waitFor } from '@troupe/testkit';
import { ensureStream } from '../../src/ensure-stream';
import { LazyStream } from '../../src/lazy-stream';
import { type Logger } from '@troupe/actors';

let server: NatsServerHandle;
let nc: NatsConnection;
let jsm: JetStreamManager;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  await nc.close();
  await server.stop();
});

let n = 0;
const unique = (): { name: string; subject: string } => {
  n++;
  return { name: `ENSURE_${n}`, subject: `ensure.${n}.>` };
};

/** Counts the JetStream API requests of one kind for one stream, as the server sees them. */
function countApi(
  verb: 'INFO' | 'CREATE',
  stream: string,
): { count: () => number; sub: Subscription } {
  let count = 0;
  const sub = nc.subscribe(`$JS.API.STREAM.${verb}.${stream}`, {
    callback: () => {
      count++;
    },
  });
  return { count: () => count, sub };
}

function recordingLogger(): { logger: Logger; warnings: object[] } {
  const warnings: object[] = [];
  const logger: Logger = {
    debug: () => undefined,
    info: () => undefined,
    warn: (obj) => void warnings.push(obj),
    error: () => undefined,
    child: () => logger,
  };
  return { logger, warnings };
}

test('ensureStream creates a missing stream with the spec, then finds it', async () => {
  const { name, subject } = unique();
  await expect(
    ensureStream(jsm, { name, subjects: [subject], duplicateWindowMs: 60_000, maxAgeMs: 0 }),
  ).resolves.toEqual({ created: true, differences: [] });
  const info = await jsm.streams.info(name);
  expect(info.config.subjects).toEqual([subject]);
  expect(info.config.num_replicas).toBe(1);
  expect(info.config.duplicate_window).toBe(60_000 * 1_000_000);
  await expect(
    ensureStream(jsm, { name, subjects: [subject], duplicateWindowMs: 60_000 }),
  ).resolves.toEqual({ created: false, differences: [] });
});

test('ensureStream accepts an existing stream with other settings, unchanged, and reports each difference', async () => {
  const { name, subject } = unique();
  await jsm.streams.add({
    name,
    subjects: [subject],
    num_replicas: 1,
    duplicate_window: 30_000 * 1_000_000,
  });
  const { logger, warnings } = recordingLogger();
  const result = await ensureStream(
    jsm,
    { name, subjects: [subject, 'other.>'], replicas: 3, duplicateWindowMs: 90_000 },
    { logger },
  );
  expect(result.created).toBe(false);
  expect(result.differences).toEqual([
    `subjects: ${subject} (wanted ${['other.>', subject].sort().join(',')})`,
    'num_replicas: 1 (wanted 3)',
    'duplicate_window: 30000 ms (wanted 90000 ms)',
  ]);
  expect(warnings).toEqual([{ stream: name, differences: result.differences }]);
  const info = await jsm.streams.info(name);
  expect(info.config.subjects).toEqual([subject]);
  expect(info.config.duplicate_window).toBe(30_000 * 1_000_000);
});

test('ensureStream: a stream that cannot be created is UNAVAILABLE naming it, with the server error as cause', async () => {
  const { name, subject } = unique();
  // A single server refuses replicas > 1.
  const err = await ensureStream(jsm, { name, subjects: [subject], replicas: 3 }).then(
    () => undefined,
    (e: unknown) => e as Error & { code?: string; cause?: unknown },
  );
  expect(err?.code).toBe('UNAVAILABLE');
  expect(err?.message).toBe(`cannot create stream ${name}`);
  expect(err?.cause).toBeInstanceOf(Error);
});

test('LazyStream: concurrent callers share one creation; later calls ask nothing', async () => {
  const { name, subject } = unique();
  const infos = countApi('INFO', name);
  const creates = countApi('CREATE', name);
  try {
    await nc.flush();
    const lazy = new LazyStream({ connection: nc, spec: { name, subjects: [subject] } });
    const calls = Array.from({ length: 8 }, () => lazy.ensure());
    expect(new Set(calls).size).toBe(1);
    await Promise.all(calls);
    await lazy.ensure();
    await nc.flush();
    expect(creates.count()).toBe(1);
    expect(infos.count()).toBe(1);
    await expect(jsm.streams.info(name)).resolves.toBeDefined();
  } finally {
    infos.sub.unsubscribe();
    creates.sub.unsubscribe();
  }
});

test('LazyStream: a failed creation is retried by the next call', async () => {
  const { name, subject } = unique();
  // Another stream owns the subjects, so the create fails until it is gone.
  const blocker = `${name}_BLOCKER`;
  await jsm.streams.add({ name: blocker, subjects: [subject] });
  const creates = countApi('CREATE', name);
  try {
    const lazy = new LazyStream({ connection: nc, spec: { name, subjects: [subject] } });
    await expect(lazy.ensure()).rejects.toMatchObject({
      code: 'UNAVAILABLE',
      message: `cannot create stream ${name}`,
    });
    await jsm.streams.delete(blocker);
    await expect(lazy.ensure()).resolves.toBeDefined();
    await waitFor(() => creates.count() === 2, { timeoutMs: 10_000 });
    await expect(jsm.streams.info(name)).resolves.toBeDefined();
  } finally {
    creates.sub.unsubscribe();
  }
});
