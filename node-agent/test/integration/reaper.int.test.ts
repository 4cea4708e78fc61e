import { spawn } from 'node:child_process';
import path from 'node:path';
import { Reaper, TroupeLabel } from '@troupe/node-agent';
import { waitFor } from '@troupe/testkit';
import { dockerFixture, HOST, leftovers, removeLeftovers, type DockerFixture } from './helpers';

describe('Reaper (Docker)', () => {
  let fx: DockerFixture;

  beforeAll(async () => {
    fx = await dockerFixture();
  });

  afterAll(async () => {
    await fx.backend.close();
    await removeLeftovers(fx.docker, fx.cluster);
  });

  test('removes every container and volume of a node agent that was kill -9ed', async () => {
    const child = spawn(
      process.execPath,
      [path.join(__dirname, 'fixtures', 'create-sandboxes.js'), fx.cluster, HOST, fx.busybox, '3'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    let exitCode: number | null | undefined;
    const exited = new Promise<void>((resolve) =>
      child.once('exit', (code) => {
        exitCode = code;
        resolve();
      }),
    );
    try {
      await waitFor(() => stdout.includes('\n') || exitCode !== undefined, {
        timeoutMs: 60_000,
        message: 'the child creating its sandboxes',
      });
      expect(stderr).toBe('');
      expect(stdout).toMatch(/^READY sbx-[0-9a-f]+,sbx-[0-9a-f]+,sbx-[0-9a-f]+\n$/);
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
    // The node agent is gone; its sandboxes are still there.
    const before = await leftovers(fx.docker, fx.cluster);
    expect(before.containers).toHaveLength(3);
    expect(before.volumes).toHaveLength(3);

    // A sandbox of a live actor on the same host, and one of another host: both must stay.
    const kept = await fx.backend.create(fx.spec({}, 'sandbox/alive'));
    const otherHost = await fx.backend.create(
      fx.spec({ labels: { cluster: fx.cluster, host: 'other-host', actor: 'sandbox/child-0' } }),
    );

    const asked: string[] = [];
    const reaper = new Reaper({
      docker: fx.docker,
      cluster: fx.cluster,
      host: HOST,
      minAgeMs: 0,
      intervalMs: 60_000,
      isOwned: (actor) => {
        asked.push(actor);
        return actor === 'sandbox/alive';
      },
    });
    const result = await reaper.start();
    await reaper.stop();
    expect(result.containers).toHaveLength(3);
    expect(result.volumes).toHaveLength(3);
    expect(result.failures).toBe(0);
    expect(new Set(asked)).toEqual(
      new Set(['sandbox/alive', 'sandbox/child-0', 'sandbox/child-1', 'sandbox/child-2']),
    );
    const after = await leftovers(fx.docker, fx.cluster);
    expect(after.containers.sort()).toEqual(
      [kept.metadata().containerId!, otherHost.metadata().containerId!].sort(),
    );
    expect(after.volumes.sort()).toEqual(
      [kept.metadata().workspace, otherHost.metadata().workspace].sort(),
    );
    await kept.destroy();
    await otherHost.destroy();
    expect(await leftovers(fx.docker, fx.cluster)).toEqual({ containers: [], volumes: [] });
  });

  test('treats pool sandboxes as owned exactly while their pool is live, and spares young ones', async () => {
    const pooled = await fx.backend.create(fx.spec({}, 'pool'), { poolId: 'pool-live' });
    const orphan = await fx.backend.create(fx.spec({}, 'pool'), { poolId: 'pool-dead' });
    const young = await fx.backend.create(fx.spec({}, 'sandbox/young'));
    const reaper = new Reaper({
      docker: fx.docker,
      cluster: fx.cluster,
      host: HOST,
      minAgeMs: 0,
      isOwned: (actor) => actor !== 'pool' && actor !== 'sandbox/young',
      livePoolIds: () => ['pool-live'],
    });
    // With a long minimum age nothing is old enough to be judged.
    const cautious = new Reaper({
      docker: fx.docker,
      cluster: fx.cluster,
      host: HOST,
      minAgeMs: 600_000,
      isOwned: () => false,
    });
    expect(await cautious.sweep()).toEqual({ containers: [], volumes: [], failures: 0 });
    const result = await reaper.sweep();
    expect([...result.containers].sort()).toEqual(
      [orphan.metadata().containerId!, young.metadata().containerId!].sort(),
    );
    const left = await fx.docker.listContainers({
      all: true,
      filters: { label: [`${TroupeLabel.CLUSTER}=${fx.cluster}`] },
    });
    expect(left.map((c) => c.Labels[TroupeLabel.POOL])).toEqual(['pool-live']);
    await pooled.destroy();
    await orphan.destroy(); // already reaped: destroy stays idempotent
    await young.destroy();
    expect(await leftovers(fx.docker, fx.cluster)).toEqual({ containers: [], volumes: [] });
  });
});
