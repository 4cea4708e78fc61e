import path from 'node:path';
import { Readable } from 'node:stream';
import Docker from 'dockerode';
import { DockerSandboxBackend, type Sandbox } from '@troupe/node-agent';
import { isTroupeError } from '@troupe/proto';
import {
  makeTempDir,
  startSocketProxy,
  waitFor,
  type SocketProxyHandle,
  type TempDir,
} from '@troupe/testkit';
import { ExecEndLog } from '../../src/internal/exec-end-log';
import { recordingLogger, type RecordingLogger } from '../support/recording-logger';
import { dockerFixture, rejection, removeLeftovers, tarOf, type DockerFixture } from './helpers';

jest.setTimeout(120_000);

/**
 * Commands through a Docker daemon outage. The node agent's client reaches the real daemon
 * through a socket the test takes away (what a client sees of a restart) while it does, on the
 * real daemon, what a restart does to the containers: stops them.
 */
describe('commands through a Docker daemon outage', () => {
  let real: DockerFixture;
  let dir: TempDir;
  let proxy: SocketProxyHandle;
  let backend: DockerSandboxBackend;
  let log: RecordingLogger;
  const sandboxes: Sandbox[] = [];

  /** Waits until the sandbox met the outage: it logged that it waits for the daemon. */
  async function metOutage(what: RegExp): Promise<void> {
    await waitFor(() => log.warnings.some((m) => what.test(m)), {
      timeoutMs: 10_000,
      message: `a warning matching ${what}`,
    });
  }

  beforeAll(async () => {
    real = await dockerFixture();
    dir = await makeTempDir('docker-outage-commands-');
    const target = (real.docker.modem as { socketPath?: string }).socketPath;
    if (typeof target !== 'string') throw new Error('the testkit Docker client has no socketPath');
    proxy = await startSocketProxy(path.join(dir.path, 'docker.sock'), target);
  });

  beforeEach(() => {
    log = recordingLogger();
    backend = new DockerSandboxBackend({
      docker: new Docker({ socketPath: proxy.socketPath }),
      daemonWaitMs: 30_000,
      logger: log,
    });
  });

  afterEach(async () => {
    await proxy.up();
    await Promise.all(sandboxes.splice(0).map((s) => s.destroy().catch(() => undefined)));
  });

  afterAll(async () => {
    await proxy.down();
    await removeLeftovers(real.docker, real.cluster);
    await dir.cleanup();
  });

  async function started(actor: string): Promise<{ sb: Sandbox; container: Docker.Container }> {
    const sb = await backend.create(real.spec({}, actor));
    sandboxes.push(sb);
    await sb.ready();
    const containerId = sb.metadata().containerId;
    if (containerId === undefined) throw new Error('a Docker sandbox without a container');
    return { sb, container: real.docker.getContainer(containerId) };
  }

  /** Starts a background command that sleeps a minute; resolves once it runs. */
  async function startedSleep(sb: Sandbox): Promise<string> {
    const taskId = await sb.startBackground('echo started; sleep 60');
    await waitFor(async () => (await sb.poll(taskId)).stdout.includes('started'), {
      timeoutMs: 10_000,
      message: 'the command started',
    });
    return taskId;
  }

  test('a background command whose container stops in the outage ends failed, naming why', async () => {
    const { sb, container } = await started('sandbox/outage-stopped');
    const taskId = await startedSleep(sb);
    await proxy.down();
    // What a restart does to the container while the node agent cannot ask.
    await container.kill();
    await metOutage(/^Docker daemon unreachable: waiting for it to read a command’s end/);
    await proxy.up();
    const status = await sb.wait(taskId, { timeoutMs: 40_000 });
    // Not `exited` with a made-up code: a task would be graded on it.
    expect(status.state).toBe('failed');
    expect(status.error).toMatch(/^the command's end was lost: its container exited \(code 137\)/);
    // The sandbox is lost: later calls say so, and the caller makes a new one.
    const err = await sb.exec('true').catch((e: unknown) => e);
    expect(isTroupeError(err) && err.code).toBe('UNAVAILABLE');
    expect((err as { details?: Record<string, unknown> }).details?.['sandboxLost']).toBe(true);
  });

  test('a command whose stream alone was cut is killed, and ends failed', async () => {
    const { sb } = await started('sandbox/outage-cut');
    const taskId = await startedSleep(sb);
    await proxy.down();
    await metOutage(/^Docker daemon unreachable: waiting for it to read a command’s end/);
    await proxy.up();
    const status = await sb.wait(taskId, { timeoutMs: 40_000 });
    expect(status).toMatchObject({
      state: 'failed',
      error:
        "the command's end was lost: its output stream was cut while the Docker daemon was away",
    });
    // Killed, so a retry does not run beside it; the sandbox itself still serves.
    const ps = await sb.exec(['sh', '-c', 'ps -o args | grep -c "[s]leep 60" || true']);
    expect(ps.stdout.trim()).toBe('0');
  });

  // Seed 30001: a daemon shutting down stops the containers while it still answers, so the
  // command's exit code (137) is read, and the container was asked for before its stop showed.
  test('a command killed by its container stopping from outside ends failed, not exited 137', async () => {
    const { sb, container } = await started('sandbox/stopped-outside');
    const taskId = await startedSleep(sb);
    await container.kill();
    expect(await sb.wait(taskId, { timeoutMs: 20_000 })).toMatchObject({
      state: 'failed',
      exitCode: 137,
      error: "the command's end was lost: its container exited (code 137)",
    });
  });

  test('a foreground command killed so rejects with the sandbox lost', async () => {
    const { sb, container } = await started('sandbox/stopped-outside-exec');
    const running = sb.exec('sleep 60');
    await waitFor(
      async () => {
        const top = (await container.top()) as { Processes?: string[][] };
        return top.Processes?.some((p) => p.join(' ').includes('sleep 60')) ?? false;
      },
      { timeoutMs: 10_000, message: 'the command started' },
    );
    await container.kill();
    const err = await running.catch((e: unknown) => e);
    expect(isTroupeError(err) && err.code).toBe('UNAVAILABLE');
    expect((err as Error).message).toMatch(/no longer usable: its container exited \(code 137\)/);
  });

  // Seed 46100: a command started as the daemon shutting down stopped its container ended 126,
  // "cannot exec in a stopped state", and was graded. That end cannot be made to happen on
  // purpose (it is runc's, between Docker seeing the container run and it stopping), so the
  // sandbox's judgement of a 126 is asked directly: whose fault it is depends on the container.
  test('a command Docker could not start (126) is the sandbox’s loss only if its container stopped', async () => {
    type Judge = { judgeFailure(sinceMs: number, exitCode: number): Promise<object> };
    const { sb, container } = await started('sandbox/exec-not-started');
    const judge = sb as unknown as Judge;
    // Running: a command that is not executable, the command's own failure.
    const notExecutable = await sb.exec(['/etc/passwd']);
    expect(notExecutable.exitCode).toBe(126);
    expect(await judge.judgeFailure(Date.now(), 126)).toEqual({ oomKilled: false });
    await container.kill();
    expect(await judge.judgeFailure(Date.now(), 126)).toEqual({
      oomKilled: false,
      sandboxFailure: 'its container exited (code 137)',
    });
    expect(sb.status).toBe('failed');
  });

  // Seed 45005: the daemon shutting down killed the command, then answered, through a connection
  // still open, that its container ran.
  test('a command killed by a signal while the daemon was away ends failed', async () => {
    const { sb, container } = await started('sandbox/outage-signalled');
    const taskId = await startedSleep(sb);
    await proxy.down();
    await metOutage(/^Docker daemon unreachable: waiting for it to read a command’s end/);
    // The command's `sleep 60`, not the sandbox's own `sleep` (its main process).
    const kill = await container.exec({
      Cmd: ['sh', '-c', 'set -- $(ps -o pid,args | grep "[s]leep 60$"); kill -9 "$1"'],
    });
    await kill.start({ Detach: true });
    await waitFor(async () => (await kill.inspect()).Running === false, {
      timeoutMs: 10_000,
      message: 'the command killed',
    });
    await proxy.up();
    expect(await sb.wait(taskId, { timeoutMs: 40_000 })).toMatchObject({
      state: 'failed',
      exitCode: 137,
      error: "the command's end was lost: killed (code 137) as the Docker daemon went away",
    });
  });

  test('a command that ended before the outage keeps its own exit code', async () => {
    const { sb } = await started('sandbox/outage-ended');
    const taskId = await sb.startBackground('exit 3');
    expect(await sb.wait(taskId, { timeoutMs: 10_000 })).toMatchObject({
      state: 'exited',
      exitCode: 3,
    });
    await proxy.down();
    await proxy.up();
    expect(await sb.poll(taskId)).toMatchObject({ state: 'exited', exitCode: 3 });
  });

  test('a command started in the outage runs once the daemon answers', async () => {
    const { sb } = await started('sandbox/outage-start');
    await proxy.down();
    const running = sb.exec('echo ran');
    await metOutage(/^Docker daemon unreachable: waiting for it to run a command/);
    await proxy.up();
    expect(await running).toMatchObject({ exitCode: 0, stdout: 'ran\n' });
  });

  test('a command started in the outage fails with the sandbox lost when its container stopped', async () => {
    const { sb, container } = await started('sandbox/outage-start-stopped');
    await proxy.down();
    await container.kill();
    const starting = sb.startBackground('echo never').catch((e: unknown) => e);
    await metOutage(/^Docker daemon unreachable: waiting for it to run a command/);
    await proxy.up();
    const err = await starting;
    expect(isTroupeError(err) && err.code).toBe('UNAVAILABLE');
    expect((err as Error).message).toMatch(/while the Docker daemon was away/);
  });
});

/**
 * A daemon restart also stops containers still booting. Their log ends before the boot script
 * reports, which was taken for the image's fault (`INVALID_ARGUMENT`, never retried) and failed
 * a chaos task for good (`docker-restart`, seed 30000).
 */
describe('a container stopped from outside before it is ready', () => {
  let real: DockerFixture;
  let slowBoot: string;
  /** Images whose shell exits at once: one says why, one says nothing. */
  let complains: string;
  let silent: string;

  /** Builds `tag` from the test busybox with `/bin/sh` replaced by `script`. */
  async function shellImage(tag: string, script: string): Promise<void> {
    const context = await tarOf({
      Dockerfile: [
        `FROM ${real.busybox}`,
        'USER root',
        `RUN rm /bin/sh && printf '${script}' > /bin/sh && chmod 755 /bin/sh`,
        'USER 1000:1000',
      ].join('\n'),
    });
    const build = await real.docker.buildImage(Readable.from([context]), { t: tag });
    await new Promise<void>((resolve, reject) =>
      real.docker.modem.followProgress(build, (err: Error | null) =>
        err ? reject(err) : resolve(),
      ),
    );
  }

  beforeAll(async () => {
    real = await dockerFixture();
    complains = `troupe-test-complains:${real.cluster.toLowerCase()}`;
    silent = `troupe-test-silent:${real.cluster.toLowerCase()}`;
    await shellImage(complains, '#!/bin/busybox ash\\necho this shell is broken\\nexit 1\\n');
    await shellImage(silent, '#!/bin/busybox ash\\nexit 0\\n');
    // The busybox image whose shell waits 5 s before it runs anything: the boot script's report
    // comes late enough for the test to stop the container first.
    slowBoot = `troupe-test-slow-boot:${real.cluster.toLowerCase()}`;
    await shellImage(slowBoot, '#!/bin/busybox ash\\nsleep 5\\nexec /bin/busybox ash "$@"\\n');
  });

  afterAll(async () => {
    await removeLeftovers(real.docker, real.cluster);
    for (const image of [slowBoot, complains, silent]) {
      await real.docker
        .getImage(image)
        .remove({ force: true })
        .catch(() => undefined);
    }
  });

  test('a container that exits saying why is the image’s fault, INVALID_ARGUMENT', async () => {
    const err = await rejection(
      real.backend.create(real.spec({ image: complains }, 'sandbox/bad')),
    );
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(/did not become ready: this shell is broken/);
  });

  // Seed 46317: a container that the daemon's restart ended with no signal's code and an empty
  // log (the stream cut before it showed anything) was taken for a bad image, never retried.
  test('one that exits with nothing in its log, and not 126 or 127, is UNAVAILABLE', async () => {
    const err = await rejection(real.backend.create(real.spec({ image: silent }, 'sandbox/mute')));
    expect(err.code).toBe('UNAVAILABLE');
    expect(err.message).toMatch(
      /did not become ready: its container exited \(code 0\) without a word in its log/,
    );
  });

  test('fails UNAVAILABLE, to be made again, not as a bad image', async () => {
    const events = (await real.docker.getEvents({
      filters: JSON.stringify({
        type: ['container'],
        event: ['start'],
        label: [`troupe.cluster=${real.cluster}`],
      }),
    })) as NodeJS.ReadableStream & { destroy(): void };
    const killed = new Promise<void>((resolve, reject) => {
      events.once('data', (chunk: Buffer) => {
        const id = (JSON.parse(chunk.toString().split('\n')[0] ?? '{}') as { id?: string }).id;
        if (!id) return reject(new Error(`an event without an id: ${chunk.toString()}`));
        real.docker
          .getContainer(id)
          .kill()
          .then(() => resolve(), reject);
      });
    });
    try {
      const err = await rejection(
        real.backend.create(real.spec({ image: slowBoot }, 'sandbox/stopped')),
      );
      await killed;
      expect(err.code).toBe('UNAVAILABLE');
      expect(err.message).toMatch(
        /did not become ready: its container was stopped from outside \(code 137\)/,
      );
    } finally {
      events.destroy();
    }
  });
});

/**
 * A daemon that restarts forgets its execs: one whose end could not be read before it went down
 * (a command exiting 0 just as it stopped) was taken for lost and run again (chaos
 * `docker-restart`, seed 45045). Its `exec_die` event, sent as it exited, is the record kept.
 */
describe('ExecEndLog', () => {
  let real: DockerFixture;
  let dir: TempDir;
  let proxy: SocketProxyHandle;

  beforeAll(async () => {
    real = await dockerFixture();
    dir = await makeTempDir('exec-end-log-');
    const target = (real.docker.modem as { socketPath?: string }).socketPath;
    if (typeof target !== 'string') throw new Error('the testkit Docker client has no socketPath');
    proxy = await startSocketProxy(path.join(dir.path, 'docker.sock'), target);
  });

  afterAll(async () => {
    await proxy.down();
    await removeLeftovers(real.docker, real.cluster);
    await dir.cleanup();
  });

  test('keeps the exit code of each exec of a sandbox, those ended in an outage too', async () => {
    const log = new ExecEndLog(new Docker({ socketPath: proxy.socketPath }), recordingLogger());
    await log.start();
    const sb = await real.backend.create(real.spec({}, 'sandbox/exec-end-log'));
    try {
      const execId = async (cmd: string): Promise<string> => {
        const taskId = await sb.startBackground(cmd);
        const handle = sb.backgroundHandle?.(taskId);
        if (handle === undefined) throw new Error('a Docker sandbox task without an exec id');
        await sb.wait(taskId, { timeoutMs: 10_000 });
        return handle;
      };
      const before = await execId('exit 3');
      await waitFor(() => log.exitCodeOf(before) === 3, {
        timeoutMs: 10_000,
        message: 'the first exec’s end recorded',
      });
      // The log's stream goes with the daemon; this exec ends while it cannot follow.
      await proxy.down();
      const during = await execId('exit 0');
      await proxy.up();
      await waitFor(() => log.exitCodeOf(during) === 0, {
        timeoutMs: 15_000,
        message: 'the end of the exec of the outage recorded',
      });
      expect(log.exitCodeOf('no-such-exec')).toBeUndefined();
    } finally {
      log.close();
      await sb.destroy();
    }
  });
});
