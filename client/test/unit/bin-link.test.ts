// npm links a package's bin only when its target file exists when `npm ci` runs, and on a fresh
// clone `npm ci` runs before the build: a bin that points into dist/ is never linked, and the
// README's `npx troupe …` fails with "could not determine executable to run". Every bin must
// therefore be a tracked file, and the README's set-up must leave `node_modules/.bin/troupe`
// behind (scripts/fresh-machine checks the same on a real fresh machine).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');
const WORKSPACES = ['client', 'coordinator', 'node-agent'];

function bins(workspace: string): [string, string][] {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, workspace, 'package.json'), 'utf8')) as {
    bin?: Record<string, string>;
    files?: string[];
  };
  return Object.entries(pkg.bin ?? {});
}

describe('bin targets', () => {
  const tracked = new Set(
    execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n'),
  );

  it.each(WORKSPACES)('%s: every bin target is a tracked, executable node script', (ws) => {
    expect(bins(ws).length).toBeGreaterThan(0);
    for (const [name, target] of bins(ws)) {
      const file = path.posix.join(ws, target);
      expect({ name, tracked: tracked.has(file) }).toEqual({ name, tracked: true });
      expect(statSync(path.join(ROOT, file)).mode & 0o111).not.toBe(0);
      expect(readFileSync(path.join(ROOT, file), 'utf8')).toMatch(/^#!\/usr\/bin\/env node\n/);
    }
  });

  it('the installed troupe link runs the CLI', () => {
    const link = path.join(ROOT, 'node_modules/.bin/troupe');
    expect(realpathSync(link)).toBe(path.join(ROOT, 'client/bin/troupe.js'));
    const r = spawnSync(link, ['--help'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^Usage: troupe /);
  });

  it('output into a pipe the reader closed early ends quietly (troupe … | head)', () => {
    // `true` exits at once, before the CLI writes: its first write meets a closed pipe (EPIPE).
    const link = path.join(ROOT, 'node_modules/.bin/troupe');
    const r = spawnSync(
      'bash',
      ['-c', `"${link}" --help | true; echo "status \${PIPESTATUS[0]}"`],
      {
        encoding: 'utf8',
      },
    );
    expect(r.stdout).toBe('status 0\n');
    expect(r.stderr).toBe('');
  });

  it('a bin run before the build says how to build instead of a stack trace', () => {
    // A copy of the shim in a package folder without dist/.
    const dir = mkdtempSync(path.join(tmpdir(), 'troupe-bin-'));
    try {
      const shim = path.join(dir, 'bin', 'troupe.js');
      execFileSync('mkdir', ['-p', path.dirname(shim)]);
      execFileSync('cp', [path.join(ROOT, 'client/bin/troupe.js'), shim]);
      const r = spawnSync(process.execPath, [shim, '--help'], { encoding: 'utf8', cwd: dir });
      expect(r.status).toBe(1);
      expect(r.stderr).toBe(
        "troupe: dist/cli/main.js is not built yet; run 'bash scripts/setup' (or 'npm run build') in the Troupe checkout first\n",
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
