import path from 'node:path';
import Docker from 'dockerode';
import { ImageManager } from '@troupe/node-agent';
import {
  ensureDocker,
  makeTempDir,
  randomClusterName,
  startSocketProxy,
  waitFor,
  type SocketProxyHandle,
  type TempDir,
} from '@troupe/testkit';
import { followContainerEvents, type DockerEvent } from '../../src/follow-container-events';

jest.setTimeout(60_000);

/**
 * The chaos harness counts each task command's executions from these events, through Docker
 * daemon restarts: a stream that ended with the daemon reported "no execution" for every later
 * command (chaos `docker-restart`, seed 30000).
 */
describe('followContainerEvents through a Docker daemon outage', () => {
  let real: Docker;
  let dir: TempDir;
  let proxy: SocketProxyHandle;
  let container: Docker.Container;
  const cluster = randomClusterName();

  beforeAll(async () => {
    real = await ensureDocker();
    dir = await makeTempDir('follow-events-');
    const target = (real.modem as { socketPath?: string }).socketPath;
    if (typeof target !== 'string') throw new Error('the testkit Docker client has no socketPath');
    proxy = await startSocketProxy(path.join(dir.path, 'docker.sock'), target);
    const image = await new ImageManager({ docker: real }).ensure('busybox');
    container = await real.createContainer({
      Image: image.ref,
      Cmd: ['sleep', '600'],
      Labels: { 'troupe.cluster': cluster },
      HostConfig: { NetworkMode: 'none' },
    });
    await container.start();
  });

  afterAll(async () => {
    await proxy.down();
    await container.remove({ force: true }).catch(() => undefined);
    await dir.cleanup();
  });

  /** Runs `marker` as a command in the container, through the real daemon, to its end. */
  async function run(marker: string): Promise<void> {
    const exec = await container.exec({ Cmd: ['echo', marker], AttachStdout: true });
    const stream = await exec.start({ hijack: true });
    await new Promise<void>((resolve) => {
      stream.on('data', () => undefined);
      stream.once('end', resolve);
      stream.once('close', resolve);
    });
  }

  test('each event once, those of the outage delivered when the daemon answers again', async () => {
    const seen: string[] = [];
    const onEvent = (e: DockerEvent): void => {
      if (e.Action?.startsWith('exec_start')) seen.push(e.Action.replace(/^exec_start: /, ''));
    };
    const stop = await followContainerEvents(
      { docker: new Docker({ socketPath: proxy.socketPath }), cluster },
      ['exec_start'],
      onEvent,
    );
    try {
      await run('before');
      await waitFor(() => seen.length === 1, { timeoutMs: 10_000, message: 'the first event' });
      await proxy.down();
      // The daemon goes on without the follower: this command's event is written meanwhile.
      await run('during');
      await proxy.up();
      await waitFor(() => seen.length >= 2, { timeoutMs: 15_000, message: 'the outage’s event' });
      await run('after');
      await waitFor(() => seen.length >= 3, { timeoutMs: 10_000, message: 'the last event' });
      expect(seen).toEqual(['echo before', 'echo during', 'echo after']);
    } finally {
      stop();
    }
  });
});
