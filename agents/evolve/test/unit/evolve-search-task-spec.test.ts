import path from 'node:path';
import { parseEvolveConfig } from '../../src/evolve-config';
import {
  evolveOptionsFromSpec,
  loadSearchTask,
  parseSearchTaskSpec,
  renderEvaluatorCommand,
} from '../../src/search-task-spec';
import { parseTunableParams } from '../../src/tunable-params';

const SUITES = path.resolve(__dirname, '../../../../benchmarks/suites');

describe('the shipped suites', () => {
  it.each(['binpacking-or3', 'binpacking-weibull', 'circle-packing-26', 'digits-mle'])(
    '%s: task.yaml parses, its seeds carry parameters, its options validate',
    async (name) => {
      const task = await loadSearchTask(path.join(SUITES, name));
      expect(task.spec.name).toBe(name);
      expect(task.seeds.length).toBeGreaterThan(0);
      for (const seed of task.seeds)
        expect(parseTunableParams(seed.source).length).toBeGreaterThan(1);
      const config = parseEvolveConfig(evolveOptionsFromSpec(task.spec, { seed: 3 }));
      expect(config.seed).toBe(3);
      expect(config.direction).toBe(task.spec.direction);
      expect(config.description).toContain(' ');
      // The test phase's files never sit inside what the validation phase ships.
      const validation = task.spec.phases.validation.files;
      for (const f of task.spec.phases.test.files.filter((t) => !validation.includes(t))) {
        expect(validation.some((v) => f.startsWith(v))).toBe(false);
      }
    },
  );
});

describe('parseSearchTaskSpec', () => {
  const minimal = [
    'name: toy',
    'description: a toy',
    'language: python',
    'seeds: [seed.py]',
    'direction: maximise',
    'evaluator:',
    '  image: python-slim',
    "  command: [python3, '{suite}/grader/evaluate.py', '{program}', '{phase}', '{timeoutS}']",
    'phases:',
    '  validation: { files: [grader/] }',
    '  test: { files: [grader/, hidden/] }',
  ].join('\n');

  it('fills defaults and renders the evaluator command', () => {
    const spec = parseSearchTaskSpec(minimal);
    expect(spec.limits.maxEvaluations).toBe(200);
    expect(spec.evaluator.memoryMb).toBe(1024);
    expect(
      renderEvaluatorCommand(spec, {
        suite: '/g',
        program: '/w/p.py',
        phase: 'test',
        timeoutMs: 30_000,
      }),
    ).toEqual(['python3', '/g/grader/evaluate.py', '/w/p.py', 'test', '27']);
  });

  it.each([
    ['an unknown field', `${minimal}\nextra: 1`, 'extra'],
    ['a bad direction', minimal.replace('maximise', 'up'), 'task.yaml.direction'],
    ['a seed outside the suite', minimal.replace('[seed.py]', '[../x.py]'), 'task.yaml.seeds[0]'],
    [
      'test data inside a validation folder',
      minimal.replace('hidden/', 'grader/labels.csv'),
      'could read it',
    ],
    ['an unknown search option', `${minimal}\nsearch: { islandz: 2 }`, 'islandz'],
    ['broken YAML', 'name: [', 'not valid YAML'],
  ])('rejects %s, naming it', (_what, text, message) => {
    expect(() => parseSearchTaskSpec(text)).toThrow(message);
  });
});
