import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { errorCode, parseWith } from '@troupe/proto';
import {
  collectSkillSequence,
  firstPythonBlock,
  loadSequenceSuite,
  renderSkillSequenceReport,
  resolveSequenceImage,
  selectScenarios,
  SkillSequenceConfigSchema,
  truncateObservation,
  type SequenceTaskRun,
} from '../../src';
import { summariseArm } from '../../src/skill-sequence/sequence-task-run';

const config = (raw: unknown) =>
  parseWith(SkillSequenceConfigSchema, raw, { prefix: 'spec.config' });
const fails = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    expect(errorCode(err)).toBe('INVALID_ARGUMENT');
    return String(err);
  }
  throw new Error('did not fail');
};

describe('skill-sequence config', () => {
  test('defaults: library on, admission passed, 20 steps, no ablation', () => {
    expect(config({ agent: { kind: 'gold' } })).toMatchObject({
      agent: { kind: 'gold', maxSteps: 20 },
      library: { enabled: true, admission: 'passed', retrieveLimit: 8 },
      ablation: false,
      observationChars: 3000,
    });
  });

  test('errors name the field and the rule', () => {
    expect(fails(() => config({ agent: { kind: 'model' } }))).toContain('spec.config.agent.model');
    expect(fails(() => config({ agent: { kind: 'model' } }))).toContain(
      'is required when kind is model',
    );
    expect(fails(() => config({ agent: { kind: 'gold', model: 'x' } }))).toContain(
      'is only for kind model',
    );
    expect(fails(() => config({ agent: { kind: 'psychic' } }))).toContain('spec.config.agent.kind');
    expect(
      fails(() => config({ agent: { kind: 'gold' }, ablation: true, library: { enabled: false } })),
    ).toContain('spec.config.ablation');
    expect(
      fails(() => config({ agent: { kind: 'gold' }, library: { admission: 'sometimes' } })),
    ).toContain('spec.config.library.admission');
    expect(
      fails(() => config({ agent: { kind: 'gold' }, library: { id: 'Has Spaces' } })),
    ).toContain('must match [a-z0-9][a-z0-9_-]{0,63}');
    expect(fails(() => config({ agent: { kind: 'gold' }, bogus: 1 }))).toContain('bogus');
  });

  test('image names: a recipe name becomes its troupe image, references pass', () => {
    expect(resolveSequenceImage('python-slim')).toBe('troupe-python-slim:latest');
    expect(resolveSequenceImage('troupe-python-slim:latest')).toBe('troupe-python-slim:latest');
    expect(resolveSequenceImage('python:3.11-slim')).toBe('python:3.11-slim');
  });
});

describe('skill-sequence tasks.yaml', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'seq-suite-'));
    mkdirSync(path.join(dir, 'world'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const write = (text: string) => writeFileSync(path.join(dir, 'tasks.yaml'), text);
  const task = (id: string) => `      - {id: ${id}, seed: 1, instruction: do it}\n`;

  test('loads scenarios and selects a subset; an unknown one is named', async () => {
    write(
      `scenarios:\n  - id: a\n    description: A\n    tasks:\n${task('a_1')}${task('a_2')}  - id: b\n    description: B\n    tasks:\n${task('b_1')}`,
    );
    const suite = await loadSequenceSuite('.', dir, 'spec.tasks');
    expect(suite.file.image).toBe('python-slim');
    expect(suite.file.scenarios.map((s) => s.tasks.length)).toEqual([2, 1]);
    const c = config({ agent: { kind: 'none' }, scenarios: ['b'] });
    expect(selectScenarios(suite.file, c).map((s) => s.id)).toEqual(['b']);
    expect(
      fails(() =>
        selectScenarios(suite.file, config({ agent: { kind: 'none' }, scenarios: ['c'] })),
      ),
    ).toContain('spec.config.scenarios[0]');
  });

  test('task ids must be <scenario>_1.._N in order, scenario ids unique', async () => {
    write(`scenarios:\n  - id: a\n    description: A\n    tasks:\n${task('a_2')}`);
    await expect(loadSequenceSuite('.', dir, 'spec.tasks')).rejects.toThrow(
      /scenarios\[0\]\.tasks\[0\]\.id.*must be a_1/,
    );
    write(
      `scenarios:\n  - id: a\n    description: A\n    tasks:\n${task('a_1')}  - id: a\n    description: A\n    tasks:\n${task('a_1')}`,
    );
    await expect(loadSequenceSuite('.', dir, 'spec.tasks')).rejects.toThrow(
      /scenarios\[1\]\.id.*must be unique/,
    );
    write(`scenarios:\n  - id: Bad\n    description: A\n    tasks:\n${task('a_1')}`);
    await expect(loadSequenceSuite('.', dir, 'spec.tasks')).rejects.toThrow(/scenarios\[0\]\.id/);
  });

  test('a folder without tasks.yaml is refused naming spec.tasks.suite', async () => {
    await expect(loadSequenceSuite('nowhere', dir, 'spec.tasks')).rejects.toThrow(
      /spec\.tasks\.suite/,
    );
  });
});

describe('code actions', () => {
  test('the first python block is the action', () => {
    const reply = 'Let me look.\n```python\nprint(1)\n```\nthen\n```python\nprint(2)\n```';
    expect(firstPythonBlock(reply)).toBe('print(1)');
    expect(firstPythonBlock('```py\nx = 1\n```')).toBe('x = 1');
    expect(firstPythonBlock('no code here')).toBeUndefined();
    expect(firstPythonBlock('```bash\nls\n```')).toBeUndefined();
    expect(firstPythonBlock('```python\nunclosed = 1')).toBe('unclosed = 1');
  });

  test('observations are truncated with a reminder', () => {
    expect(truncateObservation('short', 100)).toBe('short');
    const long = 'a'.repeat(500) + 'END';
    const t = truncateObservation(long, 200);
    expect(t).toContain('output truncated to 200 chars of 503');
    expect(t.startsWith('a'.repeat(140))).toBe(true);
    expect(t).toContain('END');
  });
});

const run = (taskId: string, passed: boolean, steps: number, tokens: number): SequenceTaskRun => ({
  taskId,
  seed: 1,
  passed,
  reason: '',
  checks: [],
  completed: passed,
  stopReason: passed ? 'completed' : 'max_steps',
  steps,
  failedSteps: 0,
  promptTokens: tokens,
  completionTokens: 0,
  costUsd: tokens / 1e6,
  durationMs: 1,
  skills: {
    retrieved: [],
    checked: [],
    dropped: [],
    used: [],
    admitted: [],
    skipped: [],
    rejected: [],
  },
});

describe('results', () => {
  const library = summariseArm('library', [run('s_1', true, 3, 300), run('s_2', true, 1, 100)], 0);
  const baseline = summariseArm(
    'baseline',
    [run('s_1', true, 3, 300), run('s_2', false, 3, 300)],
    0,
  );

  test('collect puts both arms side by side per scenario and in total', () => {
    const arm = (a: typeof library) => ({
      goalCompleted: a.goalCompleted,
      passRate: a.passed / a.tasks.length,
      passed: a.passed,
      tasks: a.tasks.length,
      steps: a.steps,
      tokens: a.promptTokens,
      costUsd: a.costUsd,
    });
    const m = collectSkillSequence([
      { taskId: 's', details: { arms: { library: arm(library), baseline: arm(baseline) } } },
    ]) as { arms: Record<string, Record<string, number>>; scenarios: Record<string, unknown> };
    expect(m.arms['library']).toMatchObject({
      scenarioGoalCompletion: 1,
      taskPassRate: 1,
      steps: 4,
    });
    expect(m.arms['baseline']).toMatchObject({
      scenarioGoalCompletion: 0,
      taskPassRate: 0.5,
      steps: 6,
    });
    expect(m.scenarios['s']).toMatchObject({ library: { steps: 4 }, baseline: { steps: 6 } });
  });

  test('the report shows both arms and plots steps and tokens', () => {
    const html = renderSkillSequenceReport({
      jobId: 'j',
      scenario: 's',
      description: 'd <b>',
      arms: [baseline, library],
    });
    expect(html).toContain('steps (library)');
    expect(html).toContain('steps (baseline)');
    expect(html).toContain('d &lt;b&gt;');
    expect(html.match(/<svg/g)?.length).toBe(2);
    expect(html).toContain('with library');
  });
});
