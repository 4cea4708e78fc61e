import { existsSync } from 'node:fs';
import { ProcessSandboxBackend, readTar, WarmPool } from '@troupe/node-agent';
import { makeTempDir, waitFor, type TempDir } from '@troupe/testkit';
import { recordingLogger } from '../support/recording-logger';

const labels = { cluster: 't-proc', host: 'h1', actor: 'sandbox/p1' };

// The kill-tree script scans every /proc entry with a fork or two per process, so on a busy host
// (many processes, a loaded CPU) one run takes seconds: longer than jest's 5 s default, and longer
// than the tests' own deadlines, which are the real bounds here.
jest.setTimeout(60_000);

describe('ProcessSandboxBackend', () => {
  let root: TempDir;
  let backend: ProcessSandboxBackend;
  let log: ReturnType<typeof recordingLogger>;

  beforeAll(async () => {
    root = await makeTempDir('troupe-proc-');
    log = recordingLogger();
    backend = new ProcessSandboxBackend({
      allowUnsafeProcessBackend: true,
      rootDir: root.path,
      logger: log,
    });
  });

  afterAll(async () => {
    await backend.close();
    await root.cleanup();
  });

  test('is refused unless explicitly allowed', () => {
    let error: unknown;
    try {
      new ProcessSandboxBackend({ allowUnsafeProcessBackend: false });
    } catch (err) {
      error = err;
    }
    expect(error).toMatchObject({ code: 'PERMISSION_DENIED' });
  });

  test('warns loudly on creation and records the exception', async () => {
    const sb = await backend.create({ image: 'ignored', labels });
    try {
      expect(log.warnings.some((w) => w.includes('UNSAFE process sandbox'))).toBe(true);
      expect(sb.metadata().policyExceptions).toContain('backend:process');
      expect(sb.status).toBe('ready');
    } finally {
      await sb.destroy();
    }
  });

  test('runs commands in the workspace with the spec env and no host env', async () => {
    process.env.TROUPE_TEST_PROC_SECRET = 'nope';
    const sb = await backend.create({
      image: 'x',
      labels,
      env: { A: '1' },
      files: { 'in.txt': 'seed' },
    });
    try {
      const r = await sb.exec('cat in.txt; echo " $A $B"; env | grep -c TROUPE_TEST_PROC_SECRET', {
        env: { B: '2' },
      });
      expect(r.stdout).toBe('seed 1 2\n0\n');
      expect((await sb.exec(['sh', '-c', 'exit 7'])).exitCode).toBe(7);
      expect((await sb.exec(['cat'], { stdin: 'piped' })).stdout).toBe('piped');
    } finally {
      delete process.env.TROUPE_TEST_PROC_SECRET;
      await sb.destroy();
    }
  });

  test('a timeout kills the whole process group, even SIGTERM-ignoring members', async () => {
    const sb = await backend.create({ image: 'x', labels });
    try {
      const r = await sb.exec(
        ['sh', '-c', 'trap "" TERM; sleep 401 & setsid sleep 402 & sleep 403'],
        {
          timeoutMs: 500,
        },
      );
      expect(r.timedOut).toBe(true);
      expect(r.exitCode).toBe(137);
      // Every process on the host, by command line (no dependency on procps).
      const ps = await sb.exec([
        'sh',
        '-c',
        'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline 2>/dev/null; echo; done | grep -c "^sleep 40[123]" || true',
      ]);
      expect(ps.stdout.trim()).toBe('0');
    } finally {
      await sb.destroy();
    }
  });

  test('an interactive task: stdin stays open, stdout is read by offset', async () => {
    const sb = await backend.create({ image: 'x', labels });
    try {
      // `cat` echoes each line: a stand-in for a stdio server answering requests.
      const id = await sb.startBackground(['cat'], { interactive: true });
      await sb.writeStdin(id, 'héllo\n');
      const first = await sb.readOutput(id, { fromOffset: 0, waitMs: 10_000 });
      expect(first).toMatchObject({ data: 'héllo\n', offset: 0, state: 'running' });
      // Nothing new yet: a short wait returns empty, at the same offset.
      const none = await sb.readOutput(id, { fromOffset: first.nextOffset, waitMs: 50 });
      expect(none).toMatchObject({ data: '', nextOffset: first.nextOffset });
      await sb.writeStdin(id, 'second\n', { close: true });
      const rest = await waitFor(
        async () => {
          const r = await sb.readOutput(id, { fromOffset: first.nextOffset, waitMs: 1_000 });
          return r.state === 'exited' ? r : undefined;
        },
        { timeoutMs: 10_000 },
      );
      expect(rest).toMatchObject({ data: 'second\n', exitCode: 0 });
      await expect(sb.writeStdin(id, 'late')).rejects.toMatchObject({ code: 'UNAVAILABLE' });
      const plain = await sb.startBackground('true');
      await expect(sb.readOutput(plain, { fromOffset: 0 })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
    } finally {
      await sb.destroy();
    }
  });

  test('background tasks, files, snapshots and forks', async () => {
    const sb = await backend.create({ image: 'x', labels });
    try {
      const id = await sb.startBackground('echo started; sleep 404');
      await waitFor(async () => (await sb.poll(id)).stdout === 'started\n', { timeoutMs: 5_000 });
      expect((await sb.kill(id)).state).toBe('killed');

      await sb.putFiles('/workspace/d', {
        'x/y.txt': 'Y',
        'run.sh': { content: 'echo run', mode: 0o755 },
      });
      const entries = await readTar(await sb.getFiles('/workspace/d'));
      expect(entries.map((e) => [e.name, e.mode])).toEqual([
        ['d', expect.any(Number)],
        ['d/run.sh', 0o755],
        ['d/x', expect.any(Number)],
        ['d/x/y.txt', 0o644],
      ]);
      await expect(sb.putFiles('/etc', { a: 'b' })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });

      const snap = await sb.snapshot('p1');
      const fork = await backend.fork(snap, { labels: { actor: 'sandbox/fork' } });
      try {
        expect((await fork.exec(['sh', '-c', 'cat d/x/y.txt && ./d/run.sh'])).stdout).toBe(
          'Yrun\n',
        );
        expect(fork.spec.labels.actor).toBe('sandbox/fork');
      } finally {
        await fork.destroy();
        await backend.removeSnapshot(snap);
      }
      expect(existsSync(snap.imageId)).toBe(false);
    } finally {
      await sb.destroy();
    }
    expect(existsSync(sb.metadata().workspace)).toBe(false);
  });

  test('a warm pool over it hands out ready sandboxes and refills', async () => {
    const pool = new WarmPool({ backend, spec: { image: 'x', labels }, size: 2 });
    await pool.filled();
    expect(pool.idleCount).toBe(2);
    const a = await pool.acquire({ owner: { actor: 'sandbox/a' } });
    expect(a.status).toBe('ready');
    expect(a.spec.labels.actor).toBe('pool');
    await pool.filled();
    expect(pool.idleCount).toBe(2);
    expect(pool.handedOutCount).toBe(1);
    await a.destroy();
    pool.release(a.id);
    await pool.close();
    expect(pool.idleCount).toBe(0);
  });
});
