import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadIssueSuite } from '../../src/issue-resolution/issue-suite';
import { loadSweBenchSuite } from '../../src/issue-resolution/swe-bench-suite';
import { gitRepo } from './fixtures/git-repo';

// A job's validation and plan load its suite on the coordinator's event loop: checking out
// SWE-bench repositories and scanning every task's tree must leave the loop free for heartbeats,
// leases and other calls. These suites hold a repository of a few thousand files, as real ones do.

const FILES = 4000;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'issue-suite-loop-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Fills `root` with FILES small files in nested folders. */
function fillRepo(root: string, tag: string): void {
  for (let i = 0; i < FILES; i++) {
    const sub = path.join(root, `pkg${i % 40}`, `mod${i % 7}`);
    mkdirSync(sub, { recursive: true });
    writeFileSync(path.join(sub, `f${i}.py`), `# ${tag} ${i}\nVALUE = ${i}\n`);
  }
}

const diff = (file: string, before: string, after: string) =>
  `--- a/${file}\n+++ b/${file}\n@@ -1 +1 @@\n-${before}\n+${after}\n`;

let swe: string | undefined;

/**
 * A SWE-bench suite whose mirror holds one git repository with two commits, and four instances
 * (two per commit): two checkouts and four tree scans. Made once.
 */
function sweBenchSuite(): string {
  if (swe) return swe;
  const suite = path.join(dir, 'swe');
  const git = path.join(suite, 'mirror', 'acme__big');
  const sh = gitRepo(git);
  fillRepo(git, 'one');
  sh('add', '.');
  sh('commit', '-qm', 'one');
  const first = sh('rev-parse', 'HEAD');
  writeFileSync(path.join(git, 'extra.py'), 'X = 1\n');
  sh('add', '.');
  sh('commit', '-qm', 'two');
  const second = sh('rev-parse', 'HEAD');
  writeFileSync(
    path.join(suite, 'suite.yaml'),
    'mirror: mirror\ntest_cmd: python3 -m pytest -rA\nlog_parser: pytest\nenvironment: { base: python-slim }\n',
  );
  const lines = [first, first, second, second].map((commit, i) =>
    JSON.stringify({
      instance_id: `acme__big-${i}`,
      repo: 'acme/big',
      base_commit: commit,
      problem_statement: 'VALUE is off by one',
      patch: diff('pkg0/mod0/f0.py', '# one 0', '# fixed 0'),
      test_patch: diff('test_big.py', 'pass', `def test_${i}(): pass`),
      FAIL_TO_PASS: [`test_big.py::test_${i}`],
      PASS_TO_PASS: [],
    }),
  );
  writeFileSync(path.join(suite, 'instances.jsonl'), lines.join('\n') + '\n');
  swe = suite;
  return suite;
}

/** A task-folder suite of two tasks, each with a repo/ of FILES files. */
function folderSuite(): string {
  const suite = path.join(dir, 'folders');
  for (const id of ['big-a', 'big-b']) {
    const task = path.join(suite, id);
    fillRepo(path.join(task, 'repo'), id);
    mkdirSync(path.join(task, 'grader'), { recursive: true });
    writeFileSync(path.join(task, 'grader', 'run-tests.sh'), '#!/bin/sh\nexit 0\n', {
      mode: 0o755,
    });
    writeFileSync(
      path.join(task, 'task.yaml'),
      `id: ${id}\nimage: python\nworkdir: /workspace\ninstruction: VALUE is off by one in every module\n`,
    );
  }
  return suite;
}

/**
 * Runs `load` while a 2 ms timer ticks, and returns how long it took and the longest time the
 * timer could not fire (the longest the loop was held).
 */
async function loopHeldDuring(load: () => Promise<unknown>): Promise<{ ms: number; held: number }> {
  let last = performance.now();
  let held = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    held = Math.max(held, now - last);
    last = now;
  }, 2);
  const start = performance.now();
  try {
    await load();
  } finally {
    clearInterval(timer);
  }
  const end = performance.now();
  held = Math.max(held, end - last);
  return { ms: end - start, held };
}

test('loading a SWE-bench suite checks out and scans its repositories off the loop', async () => {
  const suite = sweBenchSuite();
  let loaded: Awaited<ReturnType<typeof loadSweBenchSuite>> | undefined;
  const { ms, held } = await loopHeldDuring(async () => {
    // What loadIssueSuite calls for a SWE-bench folder, with a cache of the test's own.
    loaded = await loadSweBenchSuite(suite, 'spec.tasks', { cacheDir: path.join(dir, 'cache') });
  });
  expect(loaded?.invalid).toEqual([]);
  expect(loaded?.tasks.map((t) => t.task.id)).toEqual([
    'acme__big-0',
    'acme__big-1',
    'acme__big-2',
    'acme__big-3',
  ]);
  // Every file of the checkout was listed: 4,000 files in 40 × 7 folders (+ extra.py at commit 2).
  expect(loaded?.tasks[0]?.repo.entries.filter((e) => e.type === 'file')).toHaveLength(FILES);
  expect(loaded?.tasks[2]?.repo.entries.filter((e) => e.type === 'file')).toHaveLength(FILES + 1);
  // Two checkouts and four scans take hundreds of milliseconds; the loop was never held for more
  // than a small part of that. A synchronous load held it for the whole load.
  expect(held).toBeLessThan(ms / 4);
}, 120_000);

test('loading a suite of task folders scans their trees off the loop', async () => {
  const suite = folderSuite();
  let loaded: Awaited<ReturnType<typeof loadIssueSuite>> | undefined;
  // The first load also loads modules and starts the YAML parser: a second one, as a job's plan
  // makes after its validation, is nothing but reads and scans.
  await loadIssueSuite(suite, 'spec.tasks');
  const { ms, held } = await loopHeldDuring(async () => {
    loaded = await loadIssueSuite(suite, 'spec.tasks');
  });
  expect(loaded?.invalid).toEqual([]);
  expect(loaded?.tasks.map((t) => [t.task.id, t.repo.entries.length])).toEqual([
    ['big-a', FILES + 40 + 40 * 7],
    ['big-b', FILES + 40 + 40 * 7],
  ]);
  expect(held).toBeLessThan(ms / 4);
}, 120_000);

test('two loads of one SWE-bench suite at once share each checkout', async () => {
  const suite = sweBenchSuite();
  const cache = path.join(dir, 'cache-shared');
  const [a, b] = await Promise.all([
    loadSweBenchSuite(suite, 'spec.tasks', { cacheDir: cache }),
    loadSweBenchSuite(suite, 'spec.tasks', { cacheDir: cache }),
  ]);
  expect(a.invalid).toEqual([]);
  expect(b.invalid).toEqual([]);
  expect(a.tasks.map((t) => t.repo.root)).toEqual(b.tasks.map((t) => t.repo.root));
  // Two commits, one generated grader per test patch; no half-written folder left behind.
  const names = readdirSync(cache).sort();
  expect(names.filter((n) => n.startsWith('repo-'))).toHaveLength(2);
  expect(names.filter((n) => n.startsWith('grader-'))).toHaveLength(4);
  expect(names.filter((n) => n.startsWith('.'))).toEqual([]);
}, 120_000);
