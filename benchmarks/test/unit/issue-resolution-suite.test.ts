import {
  cpSync,
  mkdirSync,
  readdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DriverRegistry } from '@troupe/coordinator';
import tar from 'tar-stream';
import {
  applyFilePatch,
  createIssueResolutionDriver,
  loadIssueSuite,
  loadIssueTask,
  MODEL_AGENT_UNAVAILABLE,
  packTar,
  packTree,
  parsePatch,
  scanTree,
  type TreeScan,
  type TaskAgentRunner,
  type LoadedIssueTask,
  type IssueSuite,
} from '../../src/issue-resolution';

const SUITE = path.resolve(__dirname, '../../suites/bugfix-mini');

function fileText(task: LoadedIssueTask, rel: string): string {
  return readFileSync(path.join(task.dir, 'repo', rel), 'utf8');
}

const relsOf = (scan: LoadedIssueTask['repo']): string[] => scan.entries.map((e) => e.rel);

// The task folders, listed synchronously for test.each (the loader is asynchronous).
const SHIPPED_IDS = readdirSync(SUITE, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();

describe('the shipped bugfix-mini suite', () => {
  let suite: IssueSuite;
  beforeAll(async () => {
    suite = await loadIssueSuite(SUITE, 'spec.tasks');
  });

  test('has at least 8 valid tasks in Python, JavaScript and shell', () => {
    expect(suite.invalid).toEqual([]);
    expect(suite.tasks.length).toBeGreaterThanOrEqual(8);
    const images = new Set(suite.tasks.map((t) => t.task.image));
    expect(images).toEqual(new Set(['python-slim', 'node', 'base']));
  });

  test.each(SHIPPED_IDS)(
    '%s: the patch applies, the grader is hidden, the repo has visible tests',
    (id) => {
      const task = suite.tasks.find((t) => t.task.id === id)!;
      expect(task).toBeDefined();
      expect(task.solutionPatch).toBeDefined();
      const patches = parsePatch(task.solutionPatch!);
      for (const p of patches) {
        const old = fileText(task, p.oldPath!);
        const fixed = applyFilePatch(old, p);
        expect(fixed).not.toBe(old);
      }
      expect(relsOf(task.grader)).toContain('run-tests.sh');
      // Nothing of the grader or the patch is in the repository the agent sees.
      for (const rel of relsOf(task.repo)) {
        expect(rel).not.toMatch(/grader|solution|hidden/i);
      }
      expect(relsOf(task.repo).some((rel) => /^tests?\//.test(rel))).toBe(true);
    },
  );
});

describe('unified patches', () => {
  const old = 'a\nb\nc\nd\ne\n';
  const patch = `--- a/f.txt\n+++ b/f.txt\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n`;

  test('apply with exact context, also when the hunk moved', () => {
    const [p] = parsePatch(patch);
    expect(applyFilePatch(old, p!)).toBe('a\nb\nC\nd\ne\n');
    expect(applyFilePatch(`x\ny\n${old}`, p!)).toBe('x\ny\na\nb\nC\nd\ne\n');
  });

  test('refuse context that does not match, and text that is no diff', () => {
    const [p] = parsePatch(patch);
    expect(() => applyFilePatch('a\nb\nX\nd\n', p!)).toThrow(/hunk 1 of f.txt does not apply/);
    expect(() => parsePatch('hello')).toThrow(/no file changes/);
    expect(() =>
      parsePatch('--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n'),
    ).toThrow(/unsafe path/);
  });
});

test('packTar writes a deterministic ustar archive', () => {
  const a = packTar([{ path: 'd/x.txt', data: Buffer.from('hi') }]);
  const b = packTar([{ path: 'd/x.txt', data: Buffer.from('hi') }]);
  expect(a.equals(b)).toBe(true);
  expect(a.length % 512).toBe(0);
  expect(a.subarray(257, 262).toString()).toBe('ustar');
  expect(a.subarray(0, 2).toString()).toBe('d/');
});

describe('malformed tasks', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'bugfix-suite-'));
    cpSync(path.join(SUITE, 'py-lru-cache'), path.join(dir, 'py-lru-cache'), { recursive: true });
    cpSync(path.join(SUITE, 'py-lru-cache'), path.join(dir, 'broken'), { recursive: true });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const rewrite = (edit: (text: string) => string): void => {
    const file = path.join(dir, 'broken', 'task.yaml');
    writeFileSync(file, edit(readFileSync(file, 'utf8')));
  };

  test('a bad field is reported with the task id, the field and the rule; the others load', async () => {
    rewrite((t) =>
      t.replace('id: py-lru-cache', 'id: broken').replace('agentMs: 300000', 'agentMs: 5'),
    );
    const suite = await loadIssueSuite(dir, 'spec.tasks');
    expect(suite.tasks.map((t) => t.task.id)).toEqual(['py-lru-cache']);
    expect(suite.invalid).toEqual([
      { taskId: 'broken', field: 'timeouts.agentMs', rule: 'must be >= 1000' },
    ]);
  });

  test('YAML alias errors and invalid ids make that task invalid, under a valid id', async () => {
    rewrite((t) => t.replace('id: py-lru-cache', 'id: *nowhere'));
    expect(await loadIssueTask(path.join(dir, 'broken'))).toEqual({
      taskId: 'broken',
      field: 'task.yaml',
      rule: expect.stringMatching(/is not valid YAML: .*alias.*nowhere/),
    });
    rewrite((t) => t.replace('id: *nowhere', 'a: &a [1, 1]\nb: [*a, *a]\nid: broken'));
    const many = Array.from({ length: 200 }, () => '*a').join(', ');
    rewrite((t) => t.replace('b: [*a, *a]', `b: [${many}]`));
    expect(await loadIssueTask(path.join(dir, 'broken'))).toMatchObject({
      taskId: 'broken',
      field: 'task.yaml',
      rule: 'must expand at most 100 aliases',
    });
    rewrite((t) => t.replace(/a: &a.*\nb: .*\nid: broken/, "id: 'not a valid id!'"));
    expect(await loadIssueTask(path.join(dir, 'broken'))).toMatchObject({
      taskId: 'broken',
      field: 'id',
      rule: expect.stringMatching(/must match/),
    });
    // The rest of the suite still loads.
    expect((await loadIssueSuite(dir, 'spec.tasks')).tasks.map((t) => t.task.id)).toEqual([
      'py-lru-cache',
    ]);
  });

  test('a task.yaml over 256 KiB is invalid, refused by its size', async () => {
    rewrite((t) => `${t.replace('id: py-lru-cache', 'id: broken')}\n# ${'x'.repeat(300_000)}\n`);
    const size = statSync(path.join(dir, 'broken', 'task.yaml')).size;
    expect(await loadIssueTask(path.join(dir, 'broken'))).toEqual({
      taskId: 'broken',
      field: 'task.yaml',
      rule: `must be at most 262144 bytes (got ${size})`,
    });
  });

  test('a task folder whose name is not a task id is reported under a valid id', async () => {
    cpSync(path.join(dir, 'broken'), path.join(dir, 'my task'), { recursive: true });
    expect(await loadIssueTask(path.join(dir, 'my task'))).toMatchObject({ taskId: 'my-task' });
  });

  test('unknown keys, unknown images, ids that are not the folder, missing graders', async () => {
    rewrite((t) => t.replace('id: py-lru-cache', 'id: broken\ncolour: red'));
    expect(await loadIssueTask(path.join(dir, 'broken'))).toMatchObject({ taskId: 'broken' });
    rewrite((t) => t.replace('colour: red', '').replace('image: python-slim', 'image: ubuntu'));
    expect(await loadIssueTask(path.join(dir, 'broken'))).toMatchObject({
      taskId: 'broken',
      field: 'image',
      rule: expect.stringMatching(/must be one of base, python, python-slim, node/),
    });
    rewrite((t) =>
      t.replace('image: ubuntu', 'image: python-slim').replace('id: broken', 'id: other'),
    );
    expect(await loadIssueTask(path.join(dir, 'broken'))).toMatchObject({
      taskId: 'broken',
      field: 'id',
    });
    rewrite((t) => t.replace('id: other', 'id: broken'));
    rmSync(path.join(dir, 'broken', 'grader', 'run-tests.sh'));
    expect(await loadIssueTask(path.join(dir, 'broken'))).toEqual({
      taskId: 'broken',
      field: 'grader/run-tests.sh',
      rule: 'must exist (the hidden grader)',
    });
  });
});

describe('task trees', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'task-tree-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function tarEntries(scan: TreeScan): Promise<string[]> {
    const extract = tar.extract();
    const out: string[] = [];
    const done = (async () => {
      for await (const e of extract) {
        const h = e.header;
        out.push(
          `${h.type} ${h.name}${h.linkname ? ` -> ${h.linkname}` : ''} ${h.mode?.toString(8)}`,
        );
        e.resume();
      }
    })();
    packTree(scan, 'repo/').pipe(extract);
    await done;
    return out;
  }

  test('every entry is packed: dot files, caches, empty folders, symlinks, modes', async () => {
    mkdirSync(path.join(dir, 'node_modules/.bin'), { recursive: true });
    mkdirSync(path.join(dir, '__pycache__'));
    mkdirSync(path.join(dir, 'empty'));
    writeFileSync(path.join(dir, '.env'), 'A=1\n');
    writeFileSync(path.join(dir, '__pycache__/m.pyc'), Buffer.from([0, 1, 2]));
    writeFileSync(path.join(dir, 'node_modules/x.js'), '1\n', { mode: 0o755 });
    symlinkSync('../x.js', path.join(dir, 'node_modules/.bin/x'));
    const scan = await scanTree(dir, 'repo/');
    expect(scan.bytes).toBe(4 + 3 + 2);
    const entries = await tarEntries(scan);
    expect(entries).toEqual([
      'file .env 644',
      'directory __pycache__/ 755',
      'file __pycache__/m.pyc 644',
      'directory empty/ 755',
      'directory node_modules/ 755',
      'directory node_modules/.bin/ 755',
      'symlink node_modules/.bin/x -> ../x.js 777',
      'file node_modules/x.js 755',
    ]);
    // Deterministic: the same tree gives the same bytes.
    const bytes = async () =>
      Buffer.concat(await packTree(await scanTree(dir, 'r/'), 'r/').toArray());
    expect((await bytes()).equals(await bytes())).toBe(true);
  });

  test('a symlink leading outside the tree, or an absolute one, is refused naming it', async () => {
    mkdirSync(path.join(dir, 'lib'));
    symlinkSync('../../etc', path.join(dir, 'lib/up'));
    await expect(scanTree(dir, 'repo/')).rejects.toThrow(
      'repo/lib/up: is a symlink pointing outside repo/ (to ../../etc)',
    );
    rmSync(path.join(dir, 'lib/up'));
    symlinkSync('/etc/passwd', path.join(dir, 'lib/abs'));
    await expect(scanTree(dir, 'repo/')).rejects.toThrow(
      /repo\/lib\/abs: is a symlink pointing outside/,
    );
  });

  test('a task over maxTaskMb is invalid, naming the limit', async () => {
    cpSync(path.join(SUITE, 'py-lru-cache'), path.join(dir, 'py-lru-cache'), { recursive: true });
    writeFileSync(path.join(dir, 'py-lru-cache/repo/blob.bin'), Buffer.alloc(1024 * 1024 + 1));
    const loaded = await loadIssueTask(path.join(dir, 'py-lru-cache'), { maxTaskMb: 1 });
    expect(loaded).toMatchObject({ taskId: 'py-lru-cache', field: 'repo/' });
    expect((loaded as { rule: string }).rule).toMatch(/more than config\.maxTaskMb \(1 MB\)/);
  });
});

describe('issue-resolution job specs', () => {
  const registry = new DriverRegistry().register(createIssueResolutionDriver());
  const spec = (over: Record<string, unknown> = {}) => ({
    kind: 'issue-resolution',
    config: { agent: { kind: 'gold' } },
    tasks: { suite: SUITE },
    ...over,
  });

  test('gold and none are accepted', async () => {
    expect((await registry.validate(spec())).kind).toBe('issue-resolution');
    await expect(
      registry.validate(spec({ config: { agent: { kind: 'none' } } })),
    ).resolves.toBeDefined();
  });

  test('model agents are refused at submit until a runner is wired', async () => {
    await expect(
      registry.validate(spec({ config: { agent: { kind: 'model' } }, agent: { model: 'gpt-x' } })),
    ).rejects.toThrow(MODEL_AGENT_UNAVAILABLE);
    try {
      await registry.validate(
        spec({ config: { agent: { kind: 'model' } }, agent: { model: 'gpt-x' } }),
      );
    } catch (err) {
      expect((err as { code?: string }).code).toBe('INVALID_ARGUMENT');
    }
    const model: TaskAgentRunner = {
      kind: 'model',
      run: () => Promise.reject(new Error('not in this test')),
    };
    const wired = new DriverRegistry().register(
      createIssueResolutionDriver({ agentRunners: [model] }),
    );
    await expect(
      wired.validate(spec({ config: { agent: { kind: 'model' } }, agent: { model: 'gpt-x' } })),
    ).resolves.toBeDefined();
    await expect(wired.validate(spec({ config: { agent: { kind: 'model' } } }))).rejects.toThrow(
      /spec\.agent.*is required for model agents/,
    );
  });

  test('bad fields are named', async () => {
    await expect(registry.validate(spec({ config: { agent: { kind: 'robot' } } }))).rejects.toThrow(
      /spec\.config\.agent\.kind`: must be one of gold, none, predictions, model/,
    );
    await expect(
      registry.validate(spec({ config: { agent: { kind: 'gold' }, repeat: 0 } })),
    ).rejects.toThrow(/spec\.config\.repeat: must be >= 1/);
    await expect(
      registry.validate(spec({ tasks: { suite: '/nonexistent/suite' } })),
    ).rejects.toThrow(/spec\.tasks\.suite/);
    await expect(
      registry.validate(spec({ tasks: { suite: SUITE, include: ['nope'] } })),
    ).rejects.toThrow(/spec\.tasks\.include\[0\]`: names no task folder/);
    await expect(registry.validate(spec({ agent: { model: 'gpt-x' } }))).rejects.toThrow(
      /spec\.agent.*gold agent calls no model/,
    );
  });
});
