import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  initWorkspaceRepo,
  takeWorkspacePatch,
  WorkspaceRepoState,
} from '../../src/issue-resolution/workspace-repo';
import { type WorkspaceExecResult } from '../../src/issue-resolution/workspace-sandbox';

// The scripts run by real sh and git in a temporary folder, as they run in the sandbox (cwd =
// the workdir), with HOME pointing nowhere writable so nothing comes from a global git config.

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ws-repo-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function localSandbox(cwd: string, maxOutput = 1 << 20) {
  return {
    exec(cmd: string | string[]): Promise<WorkspaceExecResult> {
      const argv = typeof cmd === 'string' ? ['sh', '-c', cmd] : cmd;
      const r = spawnSync(argv[0]!, argv.slice(1), {
        cwd,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' },
        encoding: 'utf8',
      });
      const out = r.stdout ?? '';
      return Promise.resolve({
        exitCode: r.status ?? 128,
        stdout: out.slice(0, maxOutput),
        stderr: r.stderr ?? '',
        stdoutDroppedBytes: Math.max(0, out.length - maxOutput),
        stderrDroppedBytes: 0,
        timedOut: false,
        durationMs: 0,
      });
    },
  };
}
const opts = { timeoutMs: 30_000 };
const git = (...args: string[]) =>
  spawnSync('git', ['-c', 'safe.directory=*', ...args], { cwd: dir, encoding: 'utf8' });

test('the workspace becomes a repository at the base; the patch is the change; .git goes', async () => {
  mkdirSync(path.join(dir, 'lib'));
  writeFileSync(path.join(dir, 'lib', 'calc.py'), 'def add(a, b):\n    return a - b\n');
  writeFileSync(path.join(dir, 'README'), 'calc\n');
  writeFileSync(path.join(dir, '.gitignore'), '*.log\n');
  const sb = localSandbox(dir);
  expect(await initWorkspaceRepo(sb, opts)).toBe(WorkspaceRepoState.CREATED);
  // What an agent sees: a clean tree at one commit.
  expect(git('status', '--porcelain').stdout).toBe('');
  expect(git('log', '--format=%s').stdout.trim()).toBe('base');
  // The agent edits, adds a file, removes one, and even commits part of it.
  writeFileSync(path.join(dir, 'lib', 'calc.py'), 'def add(a, b):\n    return a + b\n');
  writeFileSync(path.join(dir, 'lib', 'new.py'), 'X = 1\n');
  rmSync(path.join(dir, 'README'));
  expect(git('diff').stdout).toContain('+    return a + b');
  git('-c', 'user.name=a', '-c', 'user.email=a@a', 'commit', '-qam', 'agent');
  const taken = await takeWorkspacePatch(sb, opts);
  expect(taken.state).toBe('patch');
  const patch = taken.state === 'patch' ? taken.patch : '';
  expect(patch).toContain('diff --git a/lib/calc.py b/lib/calc.py');
  expect(patch).toContain('+    return a + b');
  expect(patch).toContain('new file mode 100644');
  expect(patch).toContain('deleted file mode 100644');
  expect(existsSync(path.join(dir, '.git'))).toBe(false);
  // The patch takes a copy of the base to the agent's tree.
  const base = mkdtempSync(path.join(tmpdir(), 'ws-base-'));
  try {
    mkdirSync(path.join(base, 'lib'));
    writeFileSync(path.join(base, 'lib', 'calc.py'), 'def add(a, b):\n    return a - b\n');
    writeFileSync(path.join(base, 'README'), 'calc\n');
    writeFileSync(path.join(base, '.gitignore'), '*.log\n');
    const applied = spawnSync('git', ['apply', '-'], { cwd: base, input: patch, encoding: 'utf8' });
    expect(applied.stderr).toBe('');
    expect(readFileSync(path.join(base, 'lib', 'calc.py'), 'utf8')).toContain('a + b');
    expect(readFileSync(path.join(base, 'lib', 'new.py'), 'utf8')).toBe('X = 1\n');
    expect(existsSync(path.join(base, 'README'))).toBe(false);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
  // Taken once: the repository is gone, so a second take finds none.
  expect(await takeWorkspacePatch(sb, opts)).toEqual({ state: 'none' });
});

test('an unchanged workspace gives an empty patch', async () => {
  writeFileSync(path.join(dir, 'a.txt'), 'a\n');
  const sb = localSandbox(dir);
  expect(await initWorkspaceRepo(sb, opts)).toBe(WorkspaceRepoState.CREATED);
  expect(await takeWorkspacePatch(sb, opts)).toEqual({ state: 'patch', patch: '' });
});

test("a repository's own .git is kept and never removed", async () => {
  writeFileSync(path.join(dir, 'a.txt'), 'a\n');
  git('init', '-q');
  const sb = localSandbox(dir);
  expect(await initWorkspaceRepo(sb, opts)).toBe(WorkspaceRepoState.KEPT);
  writeFileSync(path.join(dir, 'a.txt'), 'b\n');
  expect(await takeWorkspacePatch(sb, opts)).toEqual({ state: 'none' });
  expect(existsSync(path.join(dir, '.git', 'HEAD'))).toBe(true);
});

test('a patch longer than the sandbox returns is reported truncated, and .git still goes', async () => {
  writeFileSync(path.join(dir, 'a.txt'), 'a\n');
  const sb = localSandbox(dir, 100);
  await initWorkspaceRepo(sb, opts);
  writeFileSync(path.join(dir, 'a.txt'), 'x'.repeat(1000) + '\n');
  const taken = await takeWorkspacePatch(sb, opts);
  expect(taken.state).toBe('truncated');
  expect(existsSync(path.join(dir, '.git'))).toBe(false);
});

test('an image without git leaves the workspace a plain folder', async () => {
  writeFileSync(path.join(dir, 'a.txt'), 'a\n');
  const noGit = mkdtempSync(path.join(tmpdir(), 'ws-path-'));
  try {
    const sb = {
      exec: (cmd: string | string[]) => {
        const argv = typeof cmd === 'string' ? ['sh', '-c', cmd] : cmd;
        // sh itself by absolute path; a PATH that holds no git.
        const r = spawnSync('/bin/sh', argv.slice(1), {
          cwd: dir,
          env: { PATH: noGit },
          encoding: 'utf8',
        });
        return Promise.resolve({
          exitCode: r.status ?? 128,
          stdout: r.stdout,
          stderr: r.stderr,
          stdoutDroppedBytes: 0,
          stderrDroppedBytes: 0,
          timedOut: false,
          durationMs: 0,
        });
      },
    };
    expect(await initWorkspaceRepo(sb, opts)).toBe(WorkspaceRepoState.NO_GIT);
    expect(existsSync(path.join(dir, '.git'))).toBe(false);
  } finally {
    rmSync(noGit, { recursive: true, force: true });
  }
});
