import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Kvm } from '@nats-io/kv';
import { ActorSystem } from '@troupe/actors';
import { kvBucketName } from '@troupe/proto';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { remindAt } from '../../src/reminders';
import { type Child, spawnNode, startHost } from './helpers';

let server: NatsServerHandle;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});

const MAIN = path.join(__dirname, '../../dist/main.js');

let configFile: string;
beforeAll(() => {
  // Fast failure detection for the test: lease 1 s, heartbeats every 200 ms.
  configFile = path.join(os.tmpdir(), `troupe-coord-${process.pid}.yaml`);
  writeFileSync(
    configFile,
    'leaseMs: 1000\nrenewMs: 200\nheartbeatMs: 200\nsweepIntervalMs: 500\n',
  );
});
afterAll(() => rmSync(configFile, { force: true }));

function startCoordinator(cluster: string, id: string): Child {
  return spawnNode(MAIN, ['--config', configFile], {
    TROUPE_CLUSTER: cluster,
    TROUPE_NATS_URL: server.url,
    TROUPE_COORDINATOR_ID: id,
    TROUPE_METRICS_PORT: 'off',
    TROUPE_LOG_LEVEL: 'info',
  });
}

test('leader killed: the standby leads, and pending wakes and reminders fire', async () => {
  const cluster = randomClusterName();
  const client = await ActorSystem.start({ cluster, servers: server.url });
  const kv = await new Kvm(client.nc).create(kvBucketName(cluster, 'leases'), { history: 1 });
  const leaderOf = async () => (await kv.get('coordinator'))?.json<{ holder: string }>().holder;
  const a = startCoordinator(cluster, 'coord-a');
  let b: Child | undefined;
  let host: Child | undefined;
  try {
    await waitFor(async () => (await leaderOf()) === 'coord-a', { timeoutMs: 15_000 });
    b = startCoordinator(cluster, 'coord-b');
    await b.waitForLine((l) => l.includes('coordinator started'));
    host = await startHost(server.url, cluster, 'h1');
    const ref = client.refOf({ kind: 'worker', id: 'r1' });
    expect(await ref.ask('where', {})).toBe('h1');
    // A reminder due after the takeover, and a wake for a sleeping actor posted during it.
    await remindAt(client.nc, cluster, { kind: 'worker', id: 'r1' }, Date.now() + 2_500, 'append', {
      entry: 'reminded',
    });
    await a.kill('SIGKILL');
    await client.refOf({ kind: 'worker', id: 'r2' }).post('append', { entry: 'woken' });
    await waitFor(async () => (await leaderOf()) === 'coord-b', {
      timeoutMs: 15_000,
      message: 'standby did not take over',
    });
    const read = async (id: string) =>
      (
        (await client.states.read({ kind: 'worker', id }))?.record.data as
          { entries: string[] } | undefined
      )?.entries;
    await waitFor(async () => (await read('r2'))?.includes('woken'), {
      timeoutMs: 20_000,
      message: 'wake lost',
    });
    await waitFor(async () => (await read('r1'))?.includes('reminded'), {
      timeoutMs: 20_000,
      message: 'reminder lost',
    });
    expect(await read('r1')).toEqual(['reminded']);
  } finally {
    await client.shutdown();
    await host?.kill('SIGKILL');
    await a.kill('SIGKILL');
    await b?.kill('SIGKILL');
  }
});
