import { connect, type NatsConnection } from '@nats-io/transport-node';
import { createKv, noopLogger } from '@troupe/actors';
import {
  randomClusterName,
  startNatsServer,
  startTcpProxy,
  waitFor,
  type NatsServerHandle,
  type TcpProxyHandle,
} from '@troupe/testkit';
import { LeaderLease } from '../../src/leader-lease';

// The lease of two coordinators on one real KV bucket, with a short lease (600 ms, renewed every
// 100 ms): what must not move the leadership.
const LEASE_MS = 600;
const RENEW_MS = 100;

let server: NatsServerHandle;
const closers: (() => Promise<unknown>)[] = [];
beforeAll(async () => {
  server = await startNatsServer();
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});
afterAll(async () => {
  await server.stop();
});

interface Candidate {
  lease: LeaderLease;
  elected: number;
  deposed: number;
}

async function candidate(
  nc: NatsConnection,
  bucket: string,
  holderId: string,
  onElected: () => Promise<void> | void = () => undefined,
): Promise<Candidate> {
  const kv = await createKv(nc, bucket, { history: 1 });
  const c: Candidate = {
    elected: 0,
    deposed: 0,
    lease: new LeaderLease({
      kv,
      holderId,
      log: noopLogger,
      leaseMs: LEASE_MS,
      renewMs: RENEW_MS,
      onElected: () => {
        c.elected++;
        return onElected();
      },
      onDeposed: () => {
        c.deposed++;
      },
    }),
  };
  closers.push(() => c.lease.stop());
  return c;
}

async function connection(url: string): Promise<NatsConnection> {
  const nc = await connect({
    servers: url,
    reconnectTimeWait: 50,
    reconnectJitter: 0,
    maxReconnectAttempts: -1,
  });
  closers.push(() => nc.close());
  return nc;
}

test('a leader whose services start slowly keeps renewing; the standby waits', async () => {
  const bucket = `lease-${randomClusterName()}`;
  const nc = await connection(server.url);
  let release!: () => void;
  const started = new Promise<void>((resolve) => (release = resolve));
  const a = await candidate(nc, bucket, 'a', () => started);
  const b = await candidate(nc, bucket, 'b');
  closers.push(async () => release()); // before stop(), which waits for the transitions
  // start() waits for the services a first-try leader starts: not here, they never end.
  void a.lease.start();
  await waitFor(() => a.lease.isLeader, { timeoutMs: 5_000, message: 'a leads' });
  await b.lease.start();
  const kv = await createKv(nc, bucket, { history: 1 });
  const first = (await kv.get('coordinator'))!.revision;
  // Renewals go on while onElected has not returned: 15 of them span 1.5 s, over two leases.
  await waitFor(async () => (await kv.get('coordinator'))!.revision >= first + 15, {
    timeoutMs: 10_000,
    message: 'the leader renewed while its services started',
  });
  expect((await kv.get('coordinator'))!.json<{ holder: string }>().holder).toBe('a');
  expect(b.elected).toBe(0);
  expect(a.deposed).toBe(0);
  release();
});

test('both cut off from NATS for three leases: the leader keeps the lease afterwards', async () => {
  const bucket = `lease-${randomClusterName()}`;
  const proxies: TcpProxyHandle[] = [];
  const via = async () => {
    const proxy = await startTcpProxy({ target: { port: server.port } });
    closers.push(() => proxy.stop());
    proxies.push(proxy);
    return connection(proxy.url);
  };
  const a = await candidate(await via(), bucket, 'a');
  await a.lease.start();
  expect(a.lease.isLeader).toBe(true);
  const b = await candidate(await via(), bucket, 'b');
  await b.lease.start();
  const kv = await createKv(await connection(server.url), bucket, { history: 1 });
  // Both standby and leader lose NATS for longer than a lease; the leader steps down on its clock.
  for (const p of proxies) p.cut();
  await waitFor(() => a.deposed === 1, { timeoutMs: 10_000, message: 'a stepped down' });
  const holdUntil = Date.now() + 3 * LEASE_MS;
  await waitFor(() => Date.now() >= holdUntil && !b.lease.isLeader, { timeoutMs: 10_000 });
  for (const p of proxies) p.restore();
  // The old leader renews as soon as it reaches NATS again; the standby, which lost sight of the
  // lease, watches it afresh and sees it renewed.
  await waitFor(() => a.elected === 2, { timeoutMs: 15_000, message: 'a leads again' });
  const since = (await kv.get('coordinator'))!.revision;
  await waitFor(
    async () => (await kv.get('coordinator'))!.revision >= since + 2 * (LEASE_MS / RENEW_MS),
    {
      timeoutMs: 10_000,
      message: 'two leases of renewals',
    },
  );
  expect((await kv.get('coordinator'))!.json<{ holder: string }>().holder).toBe('a');
  expect(b.elected).toBe(0);
});
