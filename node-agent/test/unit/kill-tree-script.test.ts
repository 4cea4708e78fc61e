import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { waitFor } from '@troupe/testkit';
import { KILL_TREE_SCRIPT, TASK_ENV_KEY } from '../../src/internal/kill-tree-script';

/** Pids whose environment carries the marker (what the script hunts), read directly. */
function markedPids(marker: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const env = readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0');
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (env.includes(marker) && state !== 'Z') out.push(Number(entry));
    } catch {
      // gone, or not ours
    }
  }
  return out;
}

// The kill-tree script scans every /proc entry with a fork or two per process, so on a busy host
// (many processes, a loaded CPU) one run takes seconds: longer than jest's 5 s default, and longer
// than the tests' own deadlines, which are the real bounds here.
jest.setTimeout(60_000);

describe('KILL_TREE_SCRIPT', () => {
  test('kills a tree that ignores SIGTERM, including children that left the process group', async () => {
    const id = `task-${randomBytes(6).toString('hex')}`;
    const marker = `${TASK_ENV_KEY}=${id}`;
    const env = { PATH: '/usr/bin:/bin', [TASK_ENV_KEY]: id };
    const tree: ChildProcess = spawn(
      'sh',
      [
        '-c',
        'trap "" TERM; (trap "" TERM; sleep 301 & sleep 302) & setsid sh -c "sleep 303 & sleep 304" & sleep 305',
      ],
      { env, stdio: 'ignore', detached: true },
    );
    const exited = new Promise<void>((resolve) => tree.once('exit', () => resolve()));
    try {
      await waitFor(() => markedPids(marker).length >= 6, { timeoutMs: 10_000 });
      const helper = spawn('sh', ['-c', KILL_TREE_SCRIPT, 'troupe-kill', id], {
        env: { PATH: '/usr/bin:/bin' },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      helper.stdout.on('data', (b: Buffer) => (out += b.toString()));
      // 'close', not 'exit': on 'exit' the helper's stdout may still hold unread output.
      const code = await new Promise<number | null>((resolve) => helper.once('close', resolve));
      expect(code).toBe(0);
      expect(out).toMatch(/^killed( \d+){6,}/);
      await exited;
      await waitFor(() => markedPids(marker).length === 0, { timeoutMs: 5_000 });
    } finally {
      for (const pid of markedPids(marker)) process.kill(pid, 'SIGKILL');
    }
  });

  test('leaves other processes alone', async () => {
    const other = spawn('sleep', ['306'], {
      env: { [TASK_ENV_KEY]: 'task-other' },
      stdio: 'ignore',
    });
    try {
      const helper = spawn('sh', ['-c', KILL_TREE_SCRIPT, 'troupe-kill', 'task-nothing'], {
        stdio: 'ignore',
      });
      expect(await new Promise((resolve) => helper.once('exit', resolve))).toBe(0);
      expect(other.exitCode).toBeNull();
      expect(() => process.kill(other.pid!, 0)).not.toThrow();
    } finally {
      other.kill('SIGKILL');
    }
  });
});
