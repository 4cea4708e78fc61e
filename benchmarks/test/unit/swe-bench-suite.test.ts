import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadIssueSuite } from '../../src/issue-resolution';
import { gradeTestOutcomes } from '../../src/issue-resolution/swe-bench-grading';
import { gitRepo } from './fixtures/git-repo';

const LIB_FIXES = path.resolve(__dirname, '../../suites/lib-fixes');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'swe-suite-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const diff = (file: string, before: string, after: string) =>
  `--- a/${file}\n+++ b/${file}\n@@ -1 +1 @@\n-${before}\n+${after}\n`;

function writeSuite(
  lines: unknown[],
  suiteYaml = 'mirror: mirror\ntest_cmd: python3 -m pytest -rA\nlog_parser: pytest\nenvironment: { base: python-slim, python: [pytest] }\n',
) {
  writeFileSync(path.join(dir, 'suite.yaml'), suiteYaml);
  writeFileSync(
    path.join(dir, 'instances.jsonl'),
    lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n',
  );
}

const base = {
  instance_id: 'acme__calc-1',
  repo: 'acme/calc',
  problem_statement: 'add() subtracts instead of adding',
  patch: diff('calc.py', 'def add(a, b): return a - b', 'def add(a, b): return a + b'),
  test_patch: diff('test_calc.py', 'pass', 'def test_add(): assert add(1, 2) == 3'),
  FAIL_TO_PASS: '["test_calc.py::test_add"]',
  PASS_TO_PASS: [],
};

test('the shipped lib-fixes suite loads ten valid instances, JavaScript and Python', async () => {
  const suite = await loadIssueSuite(LIB_FIXES, 'spec.tasks');
  expect(suite.invalid).toEqual([]);
  expect(suite.tasks).toHaveLength(10);
  const js = suite.tasks.filter((t) => t.tests?.logParser === 'mocha');
  const py = suite.tasks.filter((t) => t.tests?.logParser === 'pytest');
  expect(js).toHaveLength(6);
  expect(py).toHaveLength(4);
  for (const t of suite.tasks) {
    expect(t.task.workdir).toBe('/testbed');
    expect(t.tests?.failToPass.length).toBeGreaterThan(0);
    expect(t.grader.entries.map((e) => [e.rel, e.mode])).toEqual([
      ['run-tests.sh', 0o755],
      ['test-cmd.sh', 0o644],
      ['test.patch', 0o644],
    ]);
  }
  for (const t of js) {
    expect(t.task.environment).toMatchObject({ base: 'node', npm: ['mocha@10.7.3'] });
    expect(t.repo.entries.map((e) => e.rel)).toContain('LICENSE');
  }
  for (const t of py) {
    // Pure Python from Debian bookworm, tested by Debian's pytest: no npm, no pip.
    expect(t.task.environment).toMatchObject({ base: 'python-slim', python: ['pytest'], npm: [] });
    const files = t.repo.entries.map((e) => e.rel);
    expect(files).toContain('copyright');
    expect(files.some((f) => f.endsWith('.py'))).toBe(true);
    expect(files.some((f) => f.includes('__pycache__') || f.endsWith('.pyc'))).toBe(false);
    for (const name of [...t.tests!.failToPass, ...t.tests!.passToPass]) {
      expect(name).toMatch(/^tests\/test_\w+\.py::test_\w+$/);
    }
  }
});

test('repositories come from a git mirror at base_commit; bad instances name their field', async () => {
  const git = path.join(dir, 'mirror', 'acme__calc');
  const sh = gitRepo(git);
  writeFileSync(path.join(git, 'calc.py'), 'def add(a, b): return a - b\n');
  sh('add', '.');
  sh('commit', '-qm', 'base');
  const baseCommit = sh('rev-parse', 'HEAD');
  writeFileSync(path.join(git, 'calc.py'), 'later\n');
  sh('commit', '-qam', 'later');
  const { test_patch: _tp, ...noTestPatch } = { ...base, instance_id: 'no-test-patch' };
  writeSuite([
    { ...base, base_commit: baseCommit },
    { ...noTestPatch, base_commit: baseCommit },
    { ...base, instance_id: 'bad-list', base_commit: baseCommit, PASS_TO_PASS: '[oops' },
    { ...base, instance_id: 'no-repo', repo: 'acme/missing', base_commit: baseCommit },
    'not json',
  ]);
  const suite = await loadIssueSuite(dir, 'spec.tasks');
  expect(suite.tasks.map((t) => t.task.id)).toEqual(['acme__calc-1']);
  const [task] = suite.tasks;
  expect(readFileSync(path.join(task!.repo.root, 'calc.py'), 'utf8')).toBe(
    'def add(a, b): return a - b\n',
  );
  expect(task!.tests).toEqual({
    logParser: 'pytest',
    failToPass: ['test_calc.py::test_add'],
    passToPass: [],
  });
  expect(suite.invalid).toEqual([
    expect.objectContaining({ taskId: 'no-test-patch', field: 'test_patch' }),
    expect.objectContaining({ taskId: 'bad-list', field: 'PASS_TO_PASS' }),
    expect.objectContaining({ taskId: 'no-repo', field: 'repo' }),
    expect.objectContaining({ taskId: 'line-5', field: 'instances.jsonl' }),
  ]);
  expect(suite.invalid[2]!.rule).toContain('acme__missing');
});

test('instances go through the faithful tree reader: dot files, node_modules, symlinks, the limit', async () => {
  const plain = (id: string) => path.join(dir, 'mirror', id);
  mkdirSync(path.join(plain('acme__calc-1'), 'node_modules', 'dep'), { recursive: true });
  writeFileSync(path.join(plain('acme__calc-1'), 'calc.py'), 'def add(a, b): return a - b\n');
  writeFileSync(path.join(plain('acme__calc-1'), '.env.example'), 'X=1\n');
  writeFileSync(path.join(plain('acme__calc-1'), 'node_modules', 'dep', 'index.js'), '1;\n');
  symlinkSync('calc.py', path.join(plain('acme__calc-1'), 'link.py'));
  mkdirSync(plain('acme__calc-2'), { recursive: true });
  symlinkSync('../../../etc/passwd', path.join(plain('acme__calc-2'), 'escape'));
  mkdirSync(plain('acme__calc-3'), { recursive: true });
  writeFileSync(path.join(plain('acme__calc-3'), 'big.bin'), Buffer.alloc(2 * 1024 * 1024));
  writeSuite([
    { ...base, base_commit: 'abc1234' },
    { ...base, instance_id: 'acme__calc-2', base_commit: 'abc1234' },
    { ...base, instance_id: 'acme__calc-3', base_commit: 'abc1234' },
  ]);
  const suite = await loadIssueSuite(dir, 'spec.tasks', { maxTaskMb: 1 });
  expect(suite.tasks.map((t) => t.task.id)).toEqual(['acme__calc-1']);
  expect(suite.tasks[0]!.repo.entries.map((e) => [e.rel, e.type, e.linkname])).toEqual([
    ['.env.example', 'file', undefined],
    ['calc.py', 'file', undefined],
    ['link.py', 'symlink', 'calc.py'],
    ['node_modules', 'directory', undefined],
    ['node_modules/dep', 'directory', undefined],
    ['node_modules/dep/index.js', 'file', undefined],
  ]);
  expect(suite.invalid).toEqual([
    expect.objectContaining({ taskId: 'acme__calc-2', field: 'repo/escape' }),
    expect.objectContaining({
      taskId: 'acme__calc-3',
      field: 'repo/',
      rule: expect.stringContaining('config.maxTaskMb (1 MB)'),
    }),
  ]);
});

test('a predictions file is attached to its instances; a bad line names the line and field', async () => {
  const preds = path.join(dir, 'preds.jsonl');
  writeFileSync(
    preds,
    JSON.stringify({
      instance_id: 'visionmedia__bytes.js-3.1.2',
      model_patch: 'x',
      model_name_or_path: 'm',
    }) + '\n',
  );
  const suite = await loadIssueSuite(LIB_FIXES, 'spec.tasks', { predictions: preds });
  const withPrediction = suite.tasks.filter((t) => t.prediction !== undefined);
  expect(withPrediction.map((t) => [t.task.id, t.prediction])).toEqual([
    ['visionmedia__bytes.js-3.1.2', { patch: 'x', model: 'm' }],
  ]);
  writeFileSync(preds, JSON.stringify({ instance_id: 'a', model_patch: 3 }) + '\n');
  await expect(loadIssueSuite(LIB_FIXES, 'spec.tasks', { predictions: preds })).rejects.toThrow(
    /spec\.tasks\.predictions line 1 model_patch/,
  );
});

test('resolved only when every FAIL_TO_PASS and PASS_TO_PASS test passed', () => {
  const tests = {
    logParser: 'pytest',
    failToPass: ['t.py::f'],
    passToPass: ['t.py::p', 't.py::q'],
  };
  const log = (lines: string[]) =>
    `git apply noise\nPASSED t.py::noise\n>>>>> Start Test Output\n${lines.join('\n')}\n>>>>> End Test Output (exit 1)\n`;
  expect(
    gradeTestOutcomes(tests, log(['PASSED t.py::f', 'PASSED t.py::p', 'PASSED t.py::q'])).resolved,
  ).toBe(true);
  const regressed = gradeTestOutcomes(
    tests,
    log(['PASSED t.py::f', 'FAILED t.py::p', 'PASSED t.py::q']),
  );
  expect(regressed).toMatchObject({
    resolved: false,
    failToPass: { passed: 1, total: 1 },
    passToPass: { passed: 1, total: 2 },
  });
  const missing = gradeTestOutcomes(tests, log(['PASSED t.py::f', 'PASSED t.py::p']));
  expect(missing.resolved).toBe(false);
  expect(missing.rows).toContainEqual({ test: 't.py::q', list: 'PASS_TO_PASS', status: 'MISSING' });
  // Lines outside the test output's markers are not read.
  expect(
    gradeTestOutcomes({ ...tests, failToPass: ['t.py::noise'], passToPass: [] }, log([])).resolved,
  ).toBe(false);
});
