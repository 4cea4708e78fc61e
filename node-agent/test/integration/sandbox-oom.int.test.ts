import { dockerFixture, removeLeftovers, type DockerFixture } from './helpers';

// The root config's project-level testTimeout is not applied by jest: set it here.
jest.setTimeout(120_000);

/**
 * A full tmpfs stays charged to the container's memory after the OOM killer ran, so anything
 * exec'd into the container afterwards is killed too (here the OOM killer ends up killing the
 * container's init as well): the OOM verdict must come from Docker's own record.
 */
describe('OOM kills caused by a full /tmp (Docker)', () => {
  let fx: DockerFixture;

  beforeAll(async () => {
    fx = await dockerFixture();
  });

  afterAll(async () => {
    await fx.backend.close();
    await removeLeftovers(fx.docker, fx.cluster);
  });

  // /tmp may grow past the memory limit, so filling it ends in the memory cgroup's OOM killer.
  const fillTmp = 'head -c 400000000 /dev/zero > /tmp/fill; echo survived';
  const spec = (actor: string): ReturnType<DockerFixture['spec']> =>
    fx.spec({ memoryMb: 64, tmpfsMb: 256 }, actor);

  test('a command that fills /tmp until the memory limit kills it is reported oomKilled', async () => {
    const sb = await fx.backend.create(spec('sandbox/tmp-exec'));
    try {
      const r = await sb.exec(['sh', '-c', fillTmp], { timeoutMs: 60_000 });
      expect(r.timedOut).toBe(false);
      expect(r.exitCode).not.toBe(0);
      expect(r.stdout).not.toContain('survived');
      expect(r.oomKilled).toBe(true);
    } finally {
      await sb.destroy();
    }
  });

  test('when the kill takes the container down, the result says so and later calls fail fast', async () => {
    const sb = await fx.backend.create(spec('sandbox/tmp-dead'));
    try {
      // Which process the OOM killer picks first varies; making init its first pick makes the
      // container go down every time (the sandbox user owns init, so it may raise its score).
      const r = await sb.exec(['sh', '-c', `echo 1000 > /proc/1/oom_score_adj && ${fillTmp}`], {
        timeoutMs: 60_000,
      });
      expect(r.oomKilled).toBe(true);
      const info = await fx.docker.getContainer(sb.metadata().containerId!).inspect();
      expect(info.State).toMatchObject({ Running: false, OOMKilled: true });
      expect(r.sandboxFailure).toMatch(/container exited .*killed for memory/);
      expect(sb.status).toBe('failed');
      const started = performance.now();
      await expect(sb.exec(['true'], { timeoutMs: 60_000 })).rejects.toMatchObject({
        code: 'UNAVAILABLE',
        retryable: false,
        message: expect.stringContaining('is no longer usable: its container exited'),
      });
      await expect(sb.startBackground(['true'])).rejects.toMatchObject({ code: 'UNAVAILABLE' });
      expect(performance.now() - started).toBeLessThan(5_000);
    } finally {
      await sb.destroy();
    }
    expect(sb.status).toBe('destroyed');
  });

  test('a background task that fills /tmp is reported oomKilled', async () => {
    const sb = await fx.backend.create(spec('sandbox/tmp-bg'));
    try {
      const taskId = await sb.startBackground(['sh', '-c', fillTmp]);
      const status = await sb.wait(taskId, { timeoutMs: 60_000 });
      expect(status.state).toBe('exited');
      expect(status.exitCode).not.toBe(0);
      expect(status.stdout).not.toContain('survived');
      expect(status.oomKilled).toBe(true);
    } finally {
      await sb.destroy();
    }
  });

  test('a later failing command in the same sandbox is not blamed on an earlier OOM', async () => {
    // /tmp smaller than the memory limit: the hog's memory is freed when it dies.
    const sb = await fx.backend.create(fx.spec({ memoryMb: 64, tmpfsMb: 8 }, 'sandbox/tmp-later'));
    try {
      const hog = await sb.exec(
        ['sh', '-c', 'x=$(head -c 400000000 /dev/zero | tr "\\0" a); echo survived'],
        { timeoutMs: 60_000 },
      );
      expect(hog).toMatchObject({ exitCode: 137, oomKilled: true });
      const killed = await sb.exec(['sh', '-c', 'kill -9 $$']);
      expect(killed).toMatchObject({ exitCode: 137, oomKilled: false });
      expect(killed.sandboxFailure).toBeUndefined();
      expect(await sb.exec(['true'])).toMatchObject({ exitCode: 0, oomKilled: false });
    } finally {
      await sb.destroy();
    }
  });
});
