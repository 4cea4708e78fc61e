import path from 'node:path';
import Docker from 'dockerode';
import { DockerSandboxBackend } from '@troupe/node-agent';
import { isTroupeError } from '@troupe/proto';
import {
  makeTempDir,
  startSocketProxy,
  waitFor,
  type SocketProxyHandle,
  type TempDir,
} from '@troupe/testkit';
import { recordingLogger } from '../support/recording-logger';
import { dockerFixture, leftovers, removeLeftovers, type DockerFixture } from './helpers';

jest.setTimeout(120_000);

describe('a Docker daemon outage (its socket taken away and brought back)', () => {
  let real: DockerFixture;
  let dir: TempDir;
  let proxy: SocketProxyHandle;
  let viaProxy: Docker;

  beforeAll(async () => {
    real = await dockerFixture();
    dir = await makeTempDir('docker-outage-');
    const socketPath = path.join(dir.path, 'docker.sock');
    const target = (real.docker.modem as { socketPath?: string }).socketPath;
    if (typeof target !== 'string') throw new Error('the testkit Docker client has no socketPath');
    proxy = await startSocketProxy(socketPath, target);
    viaProxy = new Docker({ socketPath });
  });

  afterAll(async () => {
    await proxy.down();
    await removeLeftovers(real.docker, real.cluster);
    await dir.cleanup();
  });

  afterEach(async () => {
    await proxy.down();
    await proxy.up();
  });

  test('a create waits for the daemon to answer again, then creates', async () => {
    const log = recordingLogger();
    const backend = new DockerSandboxBackend({ docker: viaProxy, logger: log });
    await proxy.down();
    const created = backend.create(real.spec({}, 'sandbox/outage-create'));
    await waitFor(() => log.warnings.some((m) => m.startsWith('Docker daemon unreachable')), {
      timeoutMs: 10_000,
      message: 'the create found the daemon away',
    });
    await proxy.up();
    const sb = await created;
    const r = await sb.exec('echo back');
    expect(r).toMatchObject({ exitCode: 0, stdout: 'back\n' });
    await sb.destroy();
    expect(await leftovers(real.docker, real.cluster)).toEqual({ containers: [], volumes: [] });
  });

  test('a create fails UNAVAILABLE, naming what it did, when the daemon stays away', async () => {
    const backend = new DockerSandboxBackend({ docker: viaProxy, daemonWaitMs: 1_000 });
    await proxy.down();
    const started = Date.now();
    const err = await backend.create(real.spec({}, 'sandbox/outage-gone')).catch((e: unknown) => e);
    expect(isTroupeError(err) && err.code).toBe('UNAVAILABLE');
    expect((err as Error).message).toMatch(
      /create sandbox for sandbox\/outage-gone: .*(ENOENT|ECONNREFUSED|EPIPE|ECONNRESET)/,
    );
    // It waited out daemonWaitMs, not much longer (a ping may take up to 2 s to give up).
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  test('a destroy during the outage removes the sandbox once the daemon answers', async () => {
    const backend = new DockerSandboxBackend({ docker: viaProxy });
    const sb = await backend.create(real.spec({}, 'sandbox/outage-destroy'));
    expect((await leftovers(real.docker, real.cluster)).containers).toHaveLength(1);
    await proxy.down();
    await expect(sb.destroy()).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    // Still there while the daemon is "away" (the real one keeps it) ...
    expect((await leftovers(real.docker, real.cluster)).containers).toHaveLength(1);
    await proxy.up();
    // ... and removed, with its volume, soon after it answers: not a reaper period later.
    await waitFor(
      async () => {
        const left = await leftovers(real.docker, real.cluster);
        return left.containers.length === 0 && left.volumes.length === 0;
      },
      { timeoutMs: 15_000, message: 'the sandbox removed after the outage' },
    );
  });
});
