import { WarmPool, type Sandbox } from '@troupe/node-agent';
import { dockerFixture, leftovers, removeLeftovers, type DockerFixture } from './helpers';

const MiB = 1024 * 1024;

describe('WarmPool (Docker)', () => {
  let fx: DockerFixture;
  let pool: WarmPool;

  beforeAll(async () => {
    fx = await dockerFixture();
    pool = new WarmPool({ backend: fx.backend, spec: fx.spec({ memoryMb: 256 }), size: 2 });
    pool.start();
    await pool.filled();
  });

  afterAll(async () => {
    await pool.close();
    await fx.backend.close();
    await removeLeftovers(fx.docker, fx.cluster);
  });

  test('hands out an already-ready, policy-compliant sandbox without creating one', async () => {
    expect(pool.idleCount).toBe(2);
    const t0 = Date.now();
    const started = performance.now();
    const sb = await pool.acquire({ owner: { actor: 'sandbox/user-1', job: 'j1' } });
    const acquireMs = performance.now() - started;
    try {
      // It was ready before acquire was called: nothing was created on the caller's time.
      expect(sb.metadata().readyAt).toBeLessThanOrEqual(t0);
      expect(sb.status).toBe('ready');
      // Generous bound (the perf suite measures the real figure): far below a cold create.
      expect(acquireMs).toBeLessThan(250);
      expect(pool.owns(sb.id)).toBe(true);
      const info = await fx.docker.getContainer(sb.metadata().containerId!).inspect();
      expect(info.HostConfig).toMatchObject({
        NetworkMode: 'none',
        ReadonlyRootfs: true,
        CapDrop: ['ALL'],
        Privileged: false,
        Memory: 256 * MiB,
        PidsLimit: 256,
      });
      expect(info.Config.User).toBe('1000:1000');
      expect(info.Config.Labels).toMatchObject({
        'troupe.cluster': fx.cluster,
        'troupe.actor': 'pool',
        'troupe.job': '',
        'troupe.pool': pool.id,
      });
      const r = await sb.exec(['sh', '-c', 'id -u && ls /sys/class/net && touch /workspace/w']);
      expect(r).toMatchObject({ exitCode: 0, stdout: '1000\nlo\n' });
    } finally {
      await sb.destroy();
      pool.release(sb.id);
    }
  });

  test('refills in the background and serves more acquires than its size', async () => {
    const got: Sandbox[] = await Promise.all([pool.acquire(), pool.acquire(), pool.acquire()]);
    try {
      expect(new Set(got.map((s) => s.id)).size).toBe(3);
      for (const s of got) expect(s.status).toBe('ready');
      await pool.filled();
      expect(pool.idleCount).toBe(2);
    } finally {
      await Promise.all(got.map((s) => s.destroy()));
      for (const s of got) pool.release(s.id);
    }
  });

  test('an acquire can be cancelled, and close() fails the waiting ones and destroys idle sandboxes', async () => {
    const empty = new WarmPool({ backend: fx.backend, spec: fx.spec(), size: 0 });
    const controller = new AbortController();
    const pending = empty.acquire({ signal: controller.signal });
    controller.abort('user');
    await expect(pending).rejects.toMatchObject({ code: 'CANCELLED' });
    await empty.close();
    await expect(empty.acquire()).rejects.toMatchObject({ code: 'CANCELLED' });

    await pool.close();
    expect(pool.idleCount).toBe(0);
    expect(await leftovers(fx.docker, fx.cluster)).toEqual({ containers: [], volumes: [] });
  });

  test('a pool that cannot create sandboxes fails acquire with the reason', async () => {
    const broken = new WarmPool({
      backend: fx.backend,
      spec: fx.spec({ image: 'troupe-does-not-exist:latest' }),
      size: 1,
    });
    await expect(broken.acquire()).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: expect.stringContaining('deploy/images/build.sh'),
    });
    await expect(broken.filled()).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await broken.close();
  });
});
