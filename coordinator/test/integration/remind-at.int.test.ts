import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { ActorSystem, kvKeys } from '@troupe/actors';
import {
  ErrorReason,
  hasReason,
  KvBucket,
  kvBucketName,
  noopLogger,
  TroupeError,
} from '@troupe/proto';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { cancelReminder, remindAt, ReminderService } from '../../src/reminders';

// `remindAt` is answered by the leader only; during a failover or a stall nobody answers for a
// moment. The call must wait for a leader within its deadline (a job actor's turn used to fail on
// the first "no responders" and, after five tries, its message was dead-lettered: the job hung).

let server: NatsServerHandle;
let system: ActorSystem;
let cluster: string;

beforeAll(async () => {
  server = await startNatsServer();
  cluster = randomClusterName();
  system = await ActorSystem.start({ cluster, servers: server.url });
});
afterAll(async () => {
  await system.shutdown();
  await server.stop();
});

async function startService(): Promise<ReminderService> {
  const kv = await new Kvm(system.nc).create(kvBucketName(cluster, KvBucket.REMINDERS));
  const service = new ReminderService(system.nc, cluster, kv, system, noopLogger);
  await service.start();
  return service;
}

const target = { kind: 'sleeper', id: 's1' };

test('a reminder sent while no coordinator leads is stored once one does', async () => {
  const pending = remindAt(
    system.nc,
    cluster,
    target,
    Date.now() + 3_600_000,
    'wake',
    {},
    {
      id: 'late-leader',
      timeoutMs: 60_000,
    },
  );
  // Nobody answers yet: the request finds no responders and is sent again until a leader serves.
  let settled = false;
  void pending.finally(() => (settled = true));
  await system.nc.flush();
  expect(settled).toBe(false);
  const service = await startService();
  try {
    expect(await pending).toBe('late-leader');
    const kv = await new Kvm(system.nc).open(kvBucketName(cluster, KvBucket.REMINDERS));
    expect((await kv.get('late-leader'))?.json()).toMatchObject({ type: 'wake', addr: target });
  } finally {
    service.stop();
  }
});

test('with no coordinator at all it fails UNAVAILABLE at its deadline, retryable', async () => {
  const other = randomClusterName(); // a cluster nobody serves
  const started = Date.now();
  const err = await remindAt(
    system.nc,
    other,
    target,
    Date.now(),
    'wake',
    {},
    {
      timeoutMs: 1_500,
    },
  ).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(TroupeError);
  expect((err as TroupeError).code).toBe('UNAVAILABLE');
  expect((err as TroupeError).retryable).toBe(true);
  expect((err as Error).message).toMatch(/no coordinator stored the reminder within 1500 ms/);
  // A store outage to an actor's turn: retried, not counted towards a dead letter.
  expect(hasReason(err, ErrorReason.STORE_UNAVAILABLE)).toBe(true);
  expect(Date.now() - started).toBeGreaterThanOrEqual(1_400);
});

test('a store outage on the leader is answered retryable: the reminder is stored once it ends', async () => {
  // Chaos seed 8444: a NATS server restarting answered the leader's write "jetstream is not
  // enabled"; the leader answered INTERNAL, final, and after five tries the job actor's message
  // (a batch of task reports) was dead-lettered: the job never finished.
  const kv = await new Kvm(system.nc).create(kvBucketName(cluster, KvBucket.REMINDERS));
  const service = new ReminderService(system.nc, cluster, kv, system, noopLogger);
  await service.start();
  const jsm = await jetstreamManager(system.nc);
  const stream = `KV_${kvBucketName(cluster, KvBucket.REMINDERS)}`;
  const config = (await jsm.streams.info(stream)).config;
  const put = jest.spyOn(kv, 'put');
  try {
    // The bucket's stream gone answers a put "no responders": as a server without JetStream does.
    await jsm.streams.delete(stream);
    const pending = remindAt(
      system.nc,
      cluster,
      target,
      Date.now() + 3_600_000,
      'wake',
      {},
      {
        id: 'after-outage',
        timeoutMs: 30_000,
      },
    );
    await waitFor(() => put.mock.results.some((r) => r.type === 'return'), {
      timeoutMs: 10_000,
      message: 'the leader tried to store the reminder',
    });
    await expect(put.mock.results[0]!.value).rejects.toThrow(/jetstream is not enabled/);
    await jsm.streams.add(config);
    expect(await pending).toBe('after-outage');
    expect((await kv.get('after-outage'))?.json()).toMatchObject({ type: 'wake', addr: target });
    expect(put.mock.calls.length).toBeGreaterThanOrEqual(2);
  } finally {
    put.mockRestore();
    service.stop();
  }
});

test("the leader's refusal of a bad reminder is final, not retried", async () => {
  const service = await startService();
  try {
    const started = Date.now();
    const err = await remindAt(
      system.nc,
      cluster,
      target,
      Date.now(),
      '',
      {},
      {
        timeoutMs: 60_000,
      },
    ).catch((e: unknown) => e);
    expect((err as TroupeError).code).toBe('INVALID_ARGUMENT');
    expect((err as Error).message).toMatch(/type/);
    expect(Date.now() - started).toBeLessThan(30_000);
  } finally {
    service.stop();
  }
});

test('a cancelled reminder is deleted and its timer disarmed on the leader', async () => {
  const service = await startService();
  try {
    const kv = await new Kvm(system.nc).open(kvBucketName(cluster, KvBucket.REMINDERS));
    await remindAt(system.nc, cluster, target, Date.now() + 3_600_000, 'wake', {}, { id: 'gone' });
    await waitFor(() => service.isArmed('gone'), {
      timeoutMs: 10_000,
      message: 'the reminder armed',
    });
    await cancelReminder(kv, 'gone');
    await waitFor(() => !service.isArmed('gone'), {
      timeoutMs: 10_000,
      message: 'the cancelled reminder disarmed',
    });
    // The delete marker goes too once the leader saw it: no subject is left behind.
    await waitFor(async () => (await kvKeys(kv, 'gone')).length === 0, {
      timeoutMs: 10_000,
      message: "the cancelled reminder's marker removed",
    });
    expect(await kv.get('gone')).toBeNull();
  } finally {
    service.stop();
  }
});

test('a fired reminder leaves nothing in the bucket (every job left a marker per reminder)', async () => {
  const service = await startService();
  try {
    const kv = await new Kvm(system.nc).open(kvBucketName(cluster, KvBucket.REMINDERS));
    await remindAt(system.nc, cluster, target, Date.now(), 'wake', {}, { id: 'fired' });
    await waitFor(() => service.fired >= 1, { timeoutMs: 10_000, message: 'the reminder fired' });
    await waitFor(async () => (await kvKeys(kv, 'fired')).length === 0, {
      timeoutMs: 10_000,
      message: "the fired reminder's record and marker removed",
    });
  } finally {
    service.stop();
  }
});
