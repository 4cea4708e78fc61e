import type { Sandbox } from '@troupe/node-agent';
import { waitFor } from '@troupe/testkit';
import { dockerFixture, leftovers, removeLeftovers, type DockerFixture } from './helpers';

// The root config's project-level testTimeout is not applied by jest: set it here.
jest.setTimeout(120_000);

describe('exec and background tasks (Docker)', () => {
  let fx: DockerFixture;
  let sb: Sandbox;

  beforeAll(async () => {
    fx = await dockerFixture();
    sb = await fx.backend.create(fx.spec({ env: { GREETING: 'hello' } }));
  });

  afterAll(async () => {
    await fx.backend.close();
    await removeLeftovers(fx.docker, fx.cluster);
  });

  test('is ready only after start, and reports both moments', async () => {
    const m = sb.metadata();
    expect(sb.status).toBe('ready');
    expect(m.startedAt).toBeGreaterThanOrEqual(m.createdAt);
    expect(m.readyAt).toBeGreaterThanOrEqual(m.startedAt!);
  });

  test('runs argv and shell strings with cwd, env and exit codes', async () => {
    const r = await sb.exec('echo "$GREETING $EXTRA from $(pwd)"; echo oops >&2; exit 42', {
      cwd: '/tmp',
      env: { EXTRA: 'world' },
    });
    expect(r).toMatchObject({
      exitCode: 42,
      stdout: 'hello world from /tmp\n',
      stderr: 'oops\n',
      timedOut: false,
      stdoutDroppedBytes: 0,
    });
    expect(r.durationMs).toBeGreaterThanOrEqual(0);
    const argv = await sb.exec(['printf', '%s|', 'a b', '$HOME', '"q"']);
    expect(argv.stdout).toBe('a b|$HOME|"q"|');
  });

  test('feeds stdin and closes it', async () => {
    const r = await sb.exec(['sh', '-c', 'wc -c; cat'], { stdin: 'x'.repeat(100_000) });
    expect(r.exitCode).toBe(0);
    expect(r.stdout.trim()).toBe('100000');
  });

  test('keeps the head and the tail of a large output and counts what it dropped', async () => {
    const r = await sb.exec(
      [
        'sh',
        '-c',
        'echo START; head -c 3000000 /dev/zero | tr "\\0" x; echo; echo END; echo E1 >&2; head -c 5000 /dev/zero >&2; echo E2 >&2',
      ],
      { maxOutputBytes: 1000 },
    );
    expect(r.exitCode).toBe(0);
    expect(r.stdout.startsWith('START\nxxx')).toBe(true);
    expect(r.stdout.endsWith('xxx\nEND\n')).toBe(true);
    expect(Buffer.byteLength(r.stdout)).toBe(1000);
    expect(r.stdoutDroppedBytes).toBe(6 + 3_000_000 + 1 + 4 - 1000);
    expect(r.stderr.startsWith('E1\n')).toBe(true);
    expect(r.stderr.endsWith('E2\n')).toBe(true);
    expect(r.stderrDroppedBytes).toBe(3 + 5000 + 3 - 1000);
  });

  test('cancelling kills the process tree and rejects with CANCELLED', async () => {
    const controller = new AbortController();
    const running = sb.exec(['sh', '-c', 'sleep 1011 & sleep 1012'], { signal: controller.signal });
    // Abort once the command is really running (visible to ps), not after a guessed sleep.
    await waitFor(async () => (await sb.exec(['ps', '-o', 'args'])).stdout.includes('sleep 1012'), {
      timeoutMs: 10_000,
    });
    controller.abort('user');
    await expect(running).rejects.toMatchObject({ code: 'CANCELLED' });
    const ps = await sb.exec(['ps', '-o', 'args']);
    expect(ps.stdout).not.toMatch(/sleep 101[12]/);
  });

  test('background task: poll shows progress, wait returns the result', async () => {
    const id = await sb.startBackground(
      'echo tick 1; while [ ! -e /tmp/go ]; do sleep 0.05; done; echo tick 2; exit 3',
    );
    const first = await waitFor(
      async () => {
        const s = await sb.poll(id);
        return s.stdout.includes('tick 1') ? s : undefined;
      },
      { timeoutMs: 10_000 },
    );
    expect(first.state).toBe('running');
    expect(first.exitCode).toBeUndefined();
    await sb.exec(['touch', '/tmp/go']);
    const done = await sb.wait(id, { timeoutMs: 10_000 });
    expect(done).toMatchObject({ state: 'exited', exitCode: 3, stdout: 'tick 1\ntick 2\n' });
  });

  test('background task: kill takes the whole tree; wait times out without killing', async () => {
    const id = await sb.startBackground([
      'sh',
      '-c',
      'trap "" TERM; (trap "" TERM; sleep 1021) & echo started; sleep 1022',
    ]);
    await waitFor(async () => (await sb.poll(id)).stdout.includes('started'), {
      timeoutMs: 10_000,
    });
    await expect(sb.wait(id, { timeoutMs: 200 })).rejects.toMatchObject({ code: 'TIMEOUT' });
    expect((await sb.poll(id)).state).toBe('running');
    const killed = await sb.kill(id);
    expect(killed.state).toBe('killed');
    expect(killed.exitCode).toBe(137);
    const ps = await sb.exec(['ps', '-o', 'args']);
    expect(ps.stdout).not.toMatch(/sleep 102[12]/);
  });

  test('background task: its own timeout kills it', async () => {
    const id = await sb.startBackground(['sleep', '1031'], { timeoutMs: 300 });
    const s = await sb.wait(id, { timeoutMs: 15_000 });
    expect(s.state).toBe('timed-out');
    expect(s.exitCode).toBe(137);
  });

  test('background task: beforeStart runs with its handle before the command starts', async () => {
    // The sandbox actor records the command there: a node agent killed right after the start
    // must leave a record through which the restarted agent finds how the command ended.
    const seen: { taskId: string; handle: string | undefined; ranYet: number }[] = [];
    const id = await sb.startBackground('touch /tmp/before-start-ran', {
      beforeStart: async (taskId, handle) => {
        const probe = await sb.exec('test -e /tmp/before-start-ran');
        seen.push({ taskId, handle, ranYet: probe.exitCode });
      },
    });
    expect(seen).toEqual([{ taskId: id, handle: sb.backgroundHandle?.(id), ranYet: 1 }]);
    expect(seen[0]!.handle).toEqual(expect.any(String));
    expect(await sb.wait(id, { timeoutMs: 30_000 })).toMatchObject({
      state: 'exited',
      exitCode: 0,
    });
    expect((await sb.exec('test -e /tmp/before-start-ran')).exitCode).toBe(0);
  });

  test('background task: a beforeStart that rejects keeps the command from starting', async () => {
    await expect(
      sb.startBackground('touch /tmp/never-ran', {
        beforeStart: () => Promise.reject(new Error('record not written')),
      }),
    ).rejects.toThrow('record not written');
    expect((await sb.exec('test -e /tmp/never-ran')).exitCode).toBe(1);
  });

  test('rejects bad input with errors naming the field', async () => {
    await expect(sb.exec(['true'], { timeoutMs: -5 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('timeoutMs'),
    });
    await expect(sb.exec([])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(sb.poll('task-nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  test('a command that cannot start exits 126 with the reason on stderr', async () => {
    const missing = await sb.exec(['/no/such/binary']);
    expect(missing.exitCode).toBe(126);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toMatch(/no such file or directory/);
    const badCwd = await sb.exec(['true'], { cwd: '/no/such/dir' });
    expect(badCwd.exitCode).toBe(126);
    expect(badCwd.stderr).toMatch(/chdir/);
  });

  test('a destroyed sandbox refuses work and leaves nothing behind', async () => {
    await sb.destroy();
    await expect(sb.exec(['true'])).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await leftovers(fx.docker, fx.cluster)).toEqual({ containers: [], volumes: [] });
  });
});
