import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { registerBuiltinDrivers } from '@troupe/benchmarks';
import { TroupeClient } from '@troupe/client';
import { Coordinator, DriverRegistry } from '@troupe/coordinator';
import { NodeAgent } from '@troupe/node-agent';
import { ensureDocker, startNatsServer, waitFor, type NatsServerHandle } from '@troupe/testkit';

// The NATS roles of deploy/compose/nats.conf on a real nats-server: the coordinator and a node
// agent run a shell-tasks job under their own accounts (the roles allow what the runtime
// needs), and a node agent or client account cannot publish or subscribe where its role denies.

const CONF = path.resolve(__dirname, '../../compose/nats.conf');
const CLUSTER = 'troupe'; // the cluster name nats.conf is written for
const pass = {
  coordinator: randomBytes(12).toString('hex'),
  'node-agent': randomBytes(12).toString('hex'),
  client: randomBytes(12).toString('hex'),
};

let server: NatsServerHandle;
const conns: NatsConnection[] = [];

beforeAll(async () => {
  // The variables compose passes in the environment are substituted into a copy (a spawned
  // process does not see jest's process.env); JetStream and auth come from the config file.
  const dir = mkdtempSync(path.join(tmpdir(), 'troupe-nats-perm-'));
  const vars: Record<string, string> = {
    TROUPE_NATS_STORE_DIR: path.join(dir, 'js'),
    TROUPE_NATS_COORDINATOR_PASSWORD: pass.coordinator,
    TROUPE_NATS_NODE_AGENT_PASSWORD: pass['node-agent'],
    TROUPE_NATS_CLIENT_PASSWORD: pass.client,
  };
  const conf = readFileSync(CONF, 'utf8').replace(/\$(TROUPE_[A-Z_]+)/g, (_m, name: string) => {
    const value = vars[name];
    if (value === undefined) throw new Error(`nats.conf uses an unknown variable ${name}`);
    return JSON.stringify(value);
  });
  writeFileSync(path.join(dir, 'nats.conf'), conf);
  server = await startNatsServer({ jetstream: false, args: ['-c', path.join(dir, 'nats.conf')] });
});
afterAll(async () => {
  for (const nc of conns) await nc.close().catch(() => undefined);
  await server?.stop();
});

async function as(user: keyof typeof pass): Promise<NatsConnection> {
  const nc = await connect({ servers: server.url, user, pass: pass[user] });
  conns.push(nc);
  return nc;
}

/**
 * Publishes `denied` then `marker` from `from`, with `to` subscribed to both; once the marker
 * arrives (one publisher's messages arrive in order) returns whether `denied` got through.
 */
async function delivered(from: NatsConnection, to: NatsConnection, denied: string, marker: string) {
  const seen: string[] = [];
  const a = to.subscribe(denied, { callback: (_e, m) => void seen.push(m.subject) });
  const b = to.subscribe(marker, { callback: (_e, m) => void seen.push(m.subject) });
  await to.flush();
  from.publish(denied, 'x');
  from.publish(marker, 'x');
  await from.flush();
  await waitFor(() => seen.includes(marker), { timeoutMs: 10_000, message: `marker ${marker}` });
  a.unsubscribe();
  b.unsubscribe();
  return seen.includes(denied);
}

test('wrong or missing credentials are refused', async () => {
  await expect(connect({ servers: server.url })).rejects.toThrow(/Authorization/i);
  await expect(
    connect({ servers: server.url, user: 'node-agent', pass: 'not-the-password' }),
  ).rejects.toThrow(/Authorization/i);
});

test('the coordinator and a node agent run a job under their role accounts', async () => {
  await ensureDocker();
  const token = randomBytes(24).toString('hex');
  const coordinator = await Coordinator.start(
    {
      cluster: CLUSTER,
      nats: { servers: server.url, user: 'coordinator', pass: pass.coordinator },
      metrics: { port: null },
      shutdownGraceMs: 0,
      grpc: { host: '127.0.0.1', port: 0, token },
    },
    { drivers: registerBuiltinDrivers(new DriverRegistry()) },
  );
  const agent = await NodeAgent.start({
    cluster: CLUSTER,
    hostId: 'perm-agent',
    nats: { servers: server.url, user: 'node-agent', pass: pass['node-agent'] },
    shutdownGraceMs: 2_000,
  });
  const client = new TroupeClient({
    address: `127.0.0.1:${coordinator.grpcPort}`,
    token,
    timeoutMs: 20_000,
  });
  try {
    await waitFor(
      () => coordinator.registry?.schedulable().some((h) => h.info.hostId === 'perm-agent'),
      { timeoutMs: 30_000, message: 'node agent registered' },
    );
    const job = await client.submitJob(
      "kind: shell-tasks\ntasks:\n  - {id: a, command: 'echo ok'}\n  - {id: b, command: 'exit 1'}\n",
    );
    for await (const e of client.watch(job.jobId, { signal: AbortSignal.timeout(120_000) })) {
      if (e.type === 'JOB_FINISHED') break;
    }
    const results = await client.getResults(job.jobId);
    expect(results.state).toBe('SUCCEEDED');
    expect(Object.fromEntries(results.tasks.map((t) => [t.taskId, t.status]))).toEqual({
      a: 'TASK_PASSED',
      b: 'TASK_FAILED',
    });
  } finally {
    client.close();
    await agent.stop();
    await coordinator.stop();
  }
});

test('a node agent cannot publish job events or write coordinator buckets', async () => {
  const coord = await as('coordinator');
  const agent = await as('node-agent');
  const marker = `${CLUSTER}.marker.${randomBytes(4).toString('hex')}`;
  const allowed = `troupe.${CLUSTER}.actor.sandbox.s1`;
  expect(await delivered(agent, coord, allowed, marker)).toBe(true);
  expect(await delivered(agent, coord, `troupe.${CLUSTER}.events.j-1`, marker)).toBe(false);
  expect(await delivered(agent, coord, `$KV.troupe_${CLUSTER}_jobs.j-1`, marker)).toBe(false);
  expect(await delivered(agent, coord, `$KV.troupe_${CLUSTER}_leases.leader`, marker)).toBe(false);
});

test('a node agent cannot answer for coordinator services or coordinator-hosted actors', async () => {
  const coord = await as('coordinator');
  const agent = await as('node-agent');
  const marker = `${CLUSTER}.marker.${randomBytes(4).toString('hex')}`;
  expect(await delivered(coord, agent, `troupe.${CLUSTER}.host.perm-agent.ping`, marker)).toBe(
    true,
  );
  expect(await delivered(coord, agent, `troupe.${CLUSTER}.coord.directory.lookup`, marker)).toBe(
    false,
  );
  expect(await delivered(coord, agent, `troupe.${CLUSTER}.actor.job.j-1`, marker)).toBe(false);
});

test('a client account may only address actors', async () => {
  const coord = await as('coordinator');
  const client = await as('client');
  const marker = `troupe.${CLUSTER}.actor.marker.${randomBytes(4).toString('hex')}`;
  expect(await delivered(client, coord, `troupe.${CLUSTER}.inbox.agent.a1`, marker)).toBe(true);
  expect(await delivered(client, coord, `troupe.${CLUSTER}.host.h1.activate`, marker)).toBe(false);
  expect(await delivered(client, coord, `troupe.${CLUSTER}.events.j-1`, marker)).toBe(false);
  expect(await delivered(client, coord, `$KV.troupe_${CLUSTER}_state.agent.a1`, marker)).toBe(
    false,
  );
});
