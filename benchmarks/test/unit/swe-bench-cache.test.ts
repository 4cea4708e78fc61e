import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadSweBenchSuite } from '../../src/issue-resolution/swe-bench-suite';
import {
  pruneSweBenchCache,
  SWE_BENCH_CACHE_MAX_AGE_MS,
} from '../../src/issue-resolution/swe-bench-cache';
import { gitRepo } from './fixtures/git-repo';

const DAY = 24 * 60 * 60 * 1000;
const hex = (c: string) => c.repeat(64);

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'swe-cache-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function folder(name: string, ageMs: number): string {
  const p = path.join(dir, name);
  mkdirSync(p, { recursive: true });
  writeFileSync(path.join(p, 'f'), 'x');
  const t = new Date(Date.now() - ageMs);
  utimesSync(p, t, t);
  return p;
}

test('pruning removes entries unused past the age and stale half-written ones, nothing else', async () => {
  expect(SWE_BENCH_CACHE_MAX_AGE_MS).toBe(7 * DAY);
  folder(`repo-${hex('a')}`, 8 * DAY);
  folder(`grader-${hex('b')}`, 8 * DAY);
  folder(`repo-${hex('c')}`, 6 * DAY);
  folder('.repo-old', 8 * DAY);
  folder('.grader-writing', 60_000); // a load filling it right now
  folder('someone-elses', 30 * DAY); // not the loader's: never touched
  folder(`repo-${hex('d')}-not-a-digest`, 30 * DAY);
  const removed = (await pruneSweBenchCache(dir)).sort();
  expect(removed).toEqual(['.repo-old', `grader-${hex('b')}`, `repo-${hex('a')}`]);
  expect(readdirSync(dir).sort()).toEqual(
    [
      '.grader-writing',
      `repo-${hex('c')}`,
      `repo-${hex('d')}-not-a-digest`,
      'someone-elses',
    ].sort(),
  );
  // A shorter bound, and a missing folder is no error.
  expect(await pruneSweBenchCache(dir, { maxAgeMs: 5 * DAY })).toEqual([`repo-${hex('c')}`]);
  expect(await pruneSweBenchCache(path.join(dir, 'absent'))).toEqual([]);
});

test('a load marks the folders it uses, keeps them, and prunes the ones no load used', async () => {
  const suite = path.join(dir, 'suite');
  const cache = path.join(dir, 'cache');
  const git = path.join(suite, 'mirror', 'acme__calc');
  const sh = gitRepo(git);
  writeFileSync(path.join(git, 'calc.py'), 'def add(a, b): return a - b\n');
  sh('add', '.');
  sh('commit', '-qm', 'base');
  const diff = (file: string, before: string, after: string) =>
    `--- a/${file}\n+++ b/${file}\n@@ -1 +1 @@\n-${before}\n+${after}\n`;
  writeFileSync(
    path.join(suite, 'suite.yaml'),
    'mirror: mirror\ntest_cmd: python3 -m pytest -rA\nlog_parser: pytest\nenvironment: { base: python-slim }\n',
  );
  writeFileSync(
    path.join(suite, 'instances.jsonl'),
    JSON.stringify({
      instance_id: 'acme__calc-1',
      repo: 'acme/calc',
      base_commit: sh('rev-parse', 'HEAD'),
      problem_statement: 'add() subtracts',
      patch: diff('calc.py', 'def add(a, b): return a - b', 'def add(a, b): return a + b'),
      test_patch: diff('test_calc.py', 'pass', 'def test_add(): assert add(1, 2) == 3'),
      FAIL_TO_PASS: '["test_calc.py::test_add"]',
      PASS_TO_PASS: [],
    }) + '\n',
  );
  const first = await loadSweBenchSuite(suite, 'spec.tasks', { cacheDir: cache });
  expect(first.invalid).toEqual([]);
  const used = readdirSync(cache).sort();
  expect(used.map((n) => n.split('-')[0])).toEqual(['grader', 'repo']);
  // Both unused for a month; a sentinel shows whether a folder is kept or made again.
  const old = new Date(Date.now() - 30 * DAY);
  for (const n of used) {
    writeFileSync(path.join(cache, n, '.sentinel'), '');
    utimesSync(path.join(cache, n), old, old);
  }
  const stale = folder(`cache/repo-${hex('e')}`, 30 * DAY);
  await loadSweBenchSuite(suite, 'spec.tasks', { cacheDir: cache });
  expect(existsSync(stale)).toBe(false);
  expect(readdirSync(cache).sort()).toEqual(used);
  for (const n of used) {
    expect(existsSync(path.join(cache, n, '.sentinel'))).toBe(true);
    expect(Date.now() - statSync(path.join(cache, n)).mtimeMs).toBeLessThan(60_000);
  }
});
