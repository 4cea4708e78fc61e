import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DriverRegistry } from '@troupe/coordinator';
import {
  applyFilePatch,
  createIssueResolutionDriver,
  loadIssueSuite,
  loadIssueTask,
  MODEL_AGENT_UNAVAILABLE,
  packTar,
  parsePatch,
  type TaskAgentRunner,
  type LoadedIssueTask,
} from '../../src/issue-resolution';

const SUITE = path.resolve(__dirname, '../../suites/bugfix-mini');

function fileText(task: LoadedIssueTask, rel: string): string {
  const f = task.repo[rel];
  if (!f) throw new Error(`no ${rel}`);
  return Buffer.from(f.base64, 'base64').toString('utf8');
}

describe('the shipped bugfix-mini suite', () => {
  const suite = loadIssueSuite(SUITE, 'spec.tasks');

  test('has at least 8 valid tasks in Python, JavaScript and shell', () => {
    expect(suite.invalid).toEqual([]);
    expect(suite.tasks.length).toBeGreaterThanOrEqual(8);
    const images = new Set(suite.tasks.map((t) => t.task.image));
    expect(images).toEqual(new Set(['python-slim', 'node', 'base']));
  });

  test.each(loadIssueSuite(SUITE, 'x').tasks.map((t) => [t.task.id, t] as const))(
    '%s: the patch applies, the grader is hidden, the repo has visible tests',
    (_id, task) => {
      expect(task.solutionPatch).toBeDefined();
      const patches = parsePatch(task.solutionPatch!);
      for (const p of patches) {
        const old = fileText(task, p.oldPath!);
        const fixed = applyFilePatch(old, p);
        expect(fixed).not.toBe(old);
      }
      expect(Object.keys(task.grader)).toContain('run-tests.sh');
      // Nothing of the grader or the patch is in the repository the agent sees.
      for (const rel of Object.keys(task.repo)) {
        expect(rel).not.toMatch(/grader|solution|hidden/i);
      }
      expect(Object.keys(task.repo).some((rel) => /^tests?\//.test(rel))).toBe(true);
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

  test('a bad field is reported with the task id, the field and the rule; the others load', () => {
    rewrite((t) =>
      t.replace('id: py-lru-cache', 'id: broken').replace('agentMs: 300000', 'agentMs: 5'),
    );
    const suite = loadIssueSuite(dir, 'spec.tasks');
    expect(suite.tasks.map((t) => t.task.id)).toEqual(['py-lru-cache']);
    expect(suite.invalid).toEqual([
      { taskId: 'broken', field: 'timeouts.agentMs', rule: 'must be >= 1000' },
    ]);
  });

  test('unknown keys, unknown images, ids that are not the folder, missing graders', () => {
    rewrite((t) => t.replace('id: py-lru-cache', 'id: broken\ncolour: red'));
    expect(loadIssueTask(path.join(dir, 'broken'))).toMatchObject({ taskId: 'broken' });
    rewrite((t) => t.replace('colour: red', '').replace('image: python-slim', 'image: ubuntu'));
    expect(loadIssueTask(path.join(dir, 'broken'))).toMatchObject({
      taskId: 'broken',
      field: 'image',
      rule: expect.stringMatching(/must be one of base, python, python-slim, node/),
    });
    rewrite((t) =>
      t.replace('image: ubuntu', 'image: python-slim').replace('id: broken', 'id: other'),
    );
    expect(loadIssueTask(path.join(dir, 'broken'))).toMatchObject({
      taskId: 'broken',
      field: 'id',
    });
    rewrite((t) => t.replace('id: other', 'id: broken'));
    rmSync(path.join(dir, 'broken', 'grader', 'run-tests.sh'));
    expect(loadIssueTask(path.join(dir, 'broken'))).toEqual({
      taskId: 'broken',
      field: 'grader/run-tests.sh',
      rule: 'must exist (the hidden grader)',
    });
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

  test('gold and none are accepted', () => {
    expect(registry.validate(spec()).kind).toBe('issue-resolution');
    expect(() => registry.validate(spec({ config: { agent: { kind: 'none' } } }))).not.toThrow();
  });

  test('model agents are refused at submit until a runner is wired', () => {
    expect(() =>
      registry.validate(spec({ config: { agent: { kind: 'model' } }, agent: { model: 'gpt-x' } })),
    ).toThrow(MODEL_AGENT_UNAVAILABLE);
    try {
      registry.validate(spec({ config: { agent: { kind: 'model' } }, agent: { model: 'gpt-x' } }));
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
    expect(() =>
      wired.validate(spec({ config: { agent: { kind: 'model' } }, agent: { model: 'gpt-x' } })),
    ).not.toThrow();
    expect(() => wired.validate(spec({ config: { agent: { kind: 'model' } } }))).toThrow(
      /spec\.agent.*is required for model agents/,
    );
  });

  test('bad fields are named', () => {
    expect(() => registry.validate(spec({ config: { agent: { kind: 'robot' } } }))).toThrow(
      /spec\.config\.agent\.kind`: must be one of gold, none, predictions, model/,
    );
    expect(() =>
      registry.validate(spec({ config: { agent: { kind: 'gold' }, repeat: 0 } })),
    ).toThrow(/spec\.config\.repeat: must be >= 1/);
    expect(() => registry.validate(spec({ tasks: { suite: '/nonexistent/suite' } }))).toThrow(
      /spec\.tasks\.suite/,
    );
    expect(() => registry.validate(spec({ tasks: { suite: SUITE, include: ['nope'] } }))).toThrow(
      /spec\.tasks\.include\[0\]`: names no task folder/,
    );
    expect(() => registry.validate(spec({ agent: { model: 'gpt-x' } }))).toThrow(
      /spec\.agent.*gold agent calls no model/,
    );
  });
});
