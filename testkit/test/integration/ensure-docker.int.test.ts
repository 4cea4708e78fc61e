import { spawn } from 'node:child_process';
import { chmod, readdir, readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  dockerAvailable,
  ensureDocker,
  makeTempDir,
  MissingBinaryError,
  type TempDir,
  waitFor,
} from '@troupe/testkit';

/** PIDs of running processes whose command name is `name`. */
async function pidsNamed(name: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const comm = await readFile(`/proc/${entry}/comm`, 'utf8').catch(() => '');
    if (comm.trim() === name) pids.push(Number(entry));
  }
  return pids;
}

describe('ensureDocker (machine engine)', () => {
  it('returns a client for a running engine, starting dockerd once if needed', async () => {
    // Concurrent callers share one start attempt (and the lock file guards other processes).
    const [docker, again] = await Promise.all([ensureDocker(), ensureDocker()]);
    await expect(docker.ping()).resolves.toBeTruthy();
    const version = await again.version();
    expect(version.ApiVersion).toMatch(/^\d+\.\d+$/);
    expect(await pidsNamed('dockerd')).toHaveLength(1);
    expect(dockerAvailable()).toBe(true);
    expect(existsSync('/tmp/troupe-dockerd.lock')).toBe(false);
  });
});

/**
 * The start path, exercised against a stand-in `dockerd` on a private socket: the machine's real
 * engine is a shared service that tests must not stop, so its first start happens only once.
 */
describe('ensureDocker (start path, stand-in daemon)', () => {
  let dir: TempDir;
  let fakeDockerd: string;
  let socketPath: string;
  let lockFile: string;
  let logFile: string;
  let startsFile: string;

  const FAKE_DOCKERD = `
const http = require('node:http');
const fs = require('node:fs');
const args = process.argv.slice(2);
const host = args[args.indexOf('--host') + 1];
const socket = host.replace(/^unix:\\/\\//, '');
fs.appendFileSync(process.env.FAKE_DOCKERD_STARTS || (socket + '.starts'), process.pid + '\\n');
process.stdout.write('fake dockerd starting on ' + socket + '\\n');
const server = http.createServer((req, res) => {
  if (req.url.endsWith('/_ping')) { res.end('OK'); return; }
  if (req.url.endsWith('/version')) {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ ApiVersion: '1.41', Version: 'fake' }));
    return;
  }
  res.statusCode = 404; res.end();
});
// A short delay before listening, like a real daemon, widens the window for duplicate starts.
setTimeout(() => server.listen(socket), 150);
// Never outlive the test run by much, even if cleanup is skipped.
setTimeout(() => process.exit(0), 60000).unref();
`;

  beforeEach(async () => {
    dir = await makeTempDir('troupe-dockerd-');
    fakeDockerd = path.join(dir.path, 'fake-dockerd');
    socketPath = path.join(dir.path, 'docker.sock');
    lockFile = path.join(dir.path, 'dockerd.lock');
    logFile = path.join(dir.path, 'dockerd.log');
    startsFile = `${socketPath}.starts`;
    await writeFile(fakeDockerd, `#!${process.execPath}\n${FAKE_DOCKERD}`);
    await chmod(fakeDockerd, 0o755);
  });

  afterEach(async () => {
    const starts = await readFile(startsFile, 'utf8').catch(() => '');
    for (const pid of starts.split('\n').filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // Already exited.
      }
    }
    await dir.cleanup();
  });

  const options = (): Parameters<typeof ensureDocker>[0] => ({
    socketPath,
    lockFile,
    logFile,
    dockerdBinary: fakeDockerd,
    timeoutMs: 10_000,
  });

  async function startCount(): Promise<number> {
    const starts = await readFile(startsFile, 'utf8').catch(() => '');
    return starts.split('\n').filter(Boolean).length;
  }

  it('starts the daemon once for concurrent callers, logs to the log file and releases the lock', async () => {
    expect(dockerAvailable({ socketPath, dockerdBinary: '/nonexistent/dockerd' })).toBe(false);
    const clients = await Promise.all([
      ensureDocker(options()),
      ensureDocker(options()),
      ensureDocker(options()),
    ]);
    expect(clients).toHaveLength(3);
    expect((await clients[0].version()).ApiVersion).toBe('1.41');
    expect(await startCount()).toBe(1);
    expect(await readFile(logFile, 'utf8')).toContain(`fake dockerd starting on ${socketPath}`);
    expect(existsSync(lockFile)).toBe(false);
    // Once the engine answers, later calls only ping.
    await ensureDocker(options());
    expect(await startCount()).toBe(1);
    expect(dockerAvailable({ socketPath })).toBe(true);
  });

  it('does not start a second daemon while another live process holds the lock', async () => {
    // This process stands in for "another jest worker that is starting dockerd".
    await writeFile(lockFile, `${process.pid}\n`);
    const waiting = ensureDocker(options());
    // The lock owner starts the engine; the waiter must pick it up without spawning its own.
    const owner = spawn(fakeDockerd, ['--host', `unix://${socketPath}`], { stdio: 'ignore' });
    try {
      await waiting;
      expect(await startCount()).toBe(1);
      expect((await readFile(startsFile, 'utf8')).trim()).toBe(String(owner.pid));
      // The waiter never owned the lock, so it leaves it alone.
      expect(existsSync(lockFile)).toBe(true);
    } finally {
      owner.kill('SIGKILL');
    }
  });

  it('takes over a stale lock whose owner died', async () => {
    const dead = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    await new Promise((resolve) => dead.once('exit', resolve));
    await writeFile(lockFile, `${dead.pid}\n`);
    const docker = await ensureDocker(options());
    await expect(docker.ping()).resolves.toBeTruthy();
    expect(await startCount()).toBe(1);
    expect(existsSync(lockFile)).toBe(false);
  });

  it('reports a daemon that exits during startup, with its log', async () => {
    const failing = path.join(dir.path, 'failing-dockerd');
    await writeFile(
      failing,
      '#!/bin/sh\necho "failed to start daemon: no storage driver" >&2\nexit 1\n',
    );
    await chmod(failing, 0o755);
    await expect(ensureDocker({ ...options(), dockerdBinary: failing })).rejects.toThrow(
      /dockerd exited during startup[\s\S]*no storage driver/,
    );
    expect(existsSync(lockFile)).toBe(false);
  });

  it('explains how to install the engine when dockerd is missing', async () => {
    const err = await ensureDocker({ ...options(), dockerdBinary: '/nonexistent/dockerd' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MissingBinaryError);
    expect((err as Error).message).toContain('apt-get install -y docker.io');
    expect((err as Error).message).toContain('scripts/setup');
    expect((err as Error).message).toContain(socketPath);
  });

  it('does not start anything with start: false', async () => {
    await expect(ensureDocker({ ...options(), start: false })).rejects.toThrow(
      /no Docker engine answers/,
    );
    expect(await startCount()).toBe(0);
  });

  it('stops waiting when the caller aborts, while the shared start goes on', async () => {
    const controller = new AbortController();
    const aborted = ensureDocker({ ...options(), signal: controller.signal });
    const patient = ensureDocker(options());
    controller.abort(new Error('user cancelled'));
    await expect(aborted).rejects.toThrow('user cancelled');
    await expect(patient).resolves.toBeDefined();
    await waitFor(async () => (await startCount()) === 1, { timeoutMs: 5_000 });
  });
});
