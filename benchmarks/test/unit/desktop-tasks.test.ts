import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadDesktopSuite } from '@troupe/benchmarks';
import { MAX_DESKTOP_TASKS_FILE_BYTES } from '../../src/desktop-tasks/desktop-task-spec';
import { parseAction } from '@troupe/node-agent';
import { score } from '../../src/desktop-tasks/desktop-evaluator';

const ROOT = path.resolve(__dirname, '../../..');

describe('desktop-mini suite', () => {
  let tasks: Awaited<ReturnType<typeof loadDesktopSuite>>;
  beforeAll(async () => {
    tasks = await loadDesktopSuite('benchmarks/suites/desktop-mini', ROOT, 'spec.tasks');
  });

  test('has at least ten tasks, two of them infeasible, each with a gold script', () => {
    expect(tasks.length).toBeGreaterThanOrEqual(10);
    const infeasible = tasks.filter((t) => t.evaluator.metric.type === 'infeasible');
    expect(infeasible.length).toBeGreaterThanOrEqual(2);
    for (const t of infeasible) expect(t.gold).toEqual([{ action_type: 'FAIL' }]);
  });

  test('every gold action is a valid computer_13 action; commands only where allowed', () => {
    for (const t of tasks) {
      for (const step of t.gold) {
        if ('run_command' in step) expect(t.allowCommands).toBe(true);
        else expect(() => parseAction(step, { width: 1280, height: 800 })).not.toThrow();
      }
    }
  });
});

describe('desktop suite files', () => {
  test('a tasks.yaml over 1 MiB is refused by its size, naming the file', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'desktop-suite-'));
    try {
      writeFileSync(path.join(dir, 'tasks.yaml'), `# ${'x'.repeat(1024 * 1024)}\n- id: a\n`);
      await expect(loadDesktopSuite('.', dir, 'spec.tasks')).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        details: {
          field: `spec.tasks (${path.join(dir, 'tasks.yaml')})`,
          rule: `must be at most ${MAX_DESKTOP_TASKS_FILE_BYTES} bytes (got ${1024 * 1024 + 11})`,
        },
      });
      await expect(loadDesktopSuite('nope', dir, 'spec.tasks')).rejects.toMatchObject({
        details: { field: 'spec.tasks.suite' },
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('desktop metrics', () => {
  test('score in [0, 1] from the value, never from the agent’s DONE', () => {
    expect(score({ type: 'exact', expected: 'hi', trim: true }, 'hi\n', 'DONE')).toBe(1);
    expect(score({ type: 'exact', expected: 'hi', trim: true }, '', 'DONE')).toBe(0);
    expect(score({ type: 'number', expected: 7, tolerance: 0 }, ' 7\n', undefined)).toBe(1);
    expect(score({ type: 'number', expected: 0, tolerance: 0 }, '', undefined)).toBe(0);
    expect(score({ type: 'contains', expected: ['a', 'b'] }, 'xaxb', undefined)).toBe(1);
    expect(score({ type: 'regex', pattern: '^x' }, 'yx', undefined)).toBe(0);
    expect(score({ type: 'infeasible' }, '', 'FAIL')).toBe(1);
    expect(score({ type: 'infeasible' }, '', 'DONE')).toBe(0);
    expect(score({ type: 'infeasible' }, '', undefined)).toBe(0);
  });
});
