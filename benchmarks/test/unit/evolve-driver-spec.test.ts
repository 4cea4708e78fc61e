import path from 'node:path';
import { LlmClient, ModelRegistry } from '@troupe/llm';
import { parseJobSpec } from '@troupe/coordinator';
import { errorCode } from '@troupe/proto';
import {
  createEvolveDriver,
  evolveJournalTaskId,
  loadSuiteBundle,
  phaseFiles,
} from '../../src/evolve';

const SUITES = path.resolve(__dirname, '../../suites');
const driver = createEvolveDriver({ cwd: path.resolve(__dirname, '../../..') });

async function messageOf(fn: () => unknown): Promise<string> {
  try {
    await fn();
  } catch (err) {
    expect(errorCode(err)).toBe('INVALID_ARGUMENT');
    return (err as Error).message;
  }
  throw new Error('expected an INVALID_ARGUMENT');
}

const spec = (over: Record<string, unknown>) =>
  parseJobSpec({
    kind: 'evolve',
    tasks: [{ id: 'or3', suite: 'benchmarks/suites/binpacking-or3' }],
    ...over,
  });

test('accepts the shipped job files’ shape and plans one task per search task', async () => {
  const s = spec({
    config: { evaluatorSlots: 3 },
    tasks: [
      { id: 'or3', suite: 'benchmarks/suites/binpacking-or3', limits: { maxEvaluations: 10 } },
      { id: 'circles', suite: path.join(SUITES, 'circle-packing-26'), search: { seed: 4 } },
    ],
  });
  await driver.validate(s);
  const plan = (await driver.plan(s, {} as never)) as {
    id: string;
    input: Record<string, unknown>;
  }[];
  expect(plan.map((t) => t.id)).toEqual(['or3', 'circles']);
  const files = Object.keys(plan[0]?.input['files'] as object);
  expect(files).toContain('grader/evaluate.py');
  expect(files).toContain('data/or3.json');
});

test('names the broken field of a task', async () => {
  expect(await messageOf(() => driver.validate(spec({ tasks: [{ id: 'x' }] })))).toContain(
    'spec.tasks[0].suite',
  );
  expect(
    await messageOf(() =>
      driver.validate(spec({ tasks: [{ id: 'x', suite: 'benchmarks/suites/nope' }] })),
    ),
  ).toMatch(/spec\.tasks\[0\]\.suite.*task\.yaml/);
  expect(
    await messageOf(() =>
      driver.validate(
        spec({
          tasks: [
            { id: 'x', suite: 'benchmarks/suites/binpacking-or3', limits: { maxEvaluations: 0 } },
          ],
        }),
      ),
    ),
  ).toContain('spec.tasks[0].limits.maxEvaluations');
  expect(
    await messageOf(() =>
      driver.validate(
        spec({
          tasks: [{ id: 'x', suite: 'benchmarks/suites/binpacking-or3', search: { islandz: 2 } }],
        }),
      ),
    ),
  ).toContain('islandz');
  expect(
    await messageOf(() =>
      driver.validate(
        spec({
          tasks: [
            { id: 'a', suite: 'benchmarks/suites/binpacking-or3' },
            { id: 'a', suite: 'benchmarks/suites/binpacking-or3' },
          ],
        }),
      ),
    ),
  ).toContain('spec.tasks[1].id');
  expect(await messageOf(() => driver.validate(spec({ config: { evaluatorSlots: 0 } })))).toContain(
    'spec.config.evaluatorSlots',
  );
  expect(
    await messageOf(() =>
      driver.validate(
        spec({
          tasks: [
            { id: 'x', suite: 'benchmarks/suites/binpacking-or3', search: { operators: 'llm' } },
          ],
        }),
      ),
    ),
  ).toContain('spec.tasks[0].search.operators');
});

test('a validation sandbox gets only the validation phase’s files', async () => {
  const bundle = await loadSuiteBundle(path.join(SUITES, 'binpacking-or3'), 'suite');
  const validation = Object.keys(phaseFiles(bundle.spec, bundle.files, 'validation'));
  const test = Object.keys(phaseFiles(bundle.spec, bundle.files, 'test'));
  expect(validation.some((f) => f.startsWith('data/'))).toBe(false);
  expect(validation).toContain('grader/evaluate.py');
  expect(test).toContain('data/or3.json');
});

test('journal task ids are valid evolve task ids', () => {
  expect(evolveJournalTaskId('job1', 'or3.v2')).toBe('job1-or3_v2');
  const long = evolveJournalTaskId('j'.repeat(90), 't'.repeat(60));
  expect(long).toMatch(/^ev-[0-9a-f]{40}$/);
});

test('a job that names a model needs a registry that has it; agent selects LLM operators', async () => {
  expect(await messageOf(() => driver.validate(spec({ agent: { model: 'coder' } })))).toContain(
    'spec.agent',
  );
  const models = new ModelRegistry({
    models: {
      coder: { baseURL: 'http://127.0.0.1:9/v1', model: 'm', inputUsdPer1M: 1, outputUsdPer1M: 1 },
    },
  });
  const client = new LlmClient({ registry: models });
  const withModels = createEvolveDriver({
    cwd: path.resolve(__dirname, '../../..'),
    llm: { client, models },
  });
  expect(await messageOf(() => withModels.validate(spec({ agent: { model: 'nope' } })))).toMatch(
    /spec\.agent\.model.*coder/,
  );
  await withModels.validate(spec({ agent: { model: 'coder' } }));
  // Without a model, operators: llm still needs one.
  expect(
    await messageOf(() =>
      withModels.validate(
        spec({
          tasks: [
            { id: 'x', suite: 'benchmarks/suites/binpacking-or3', search: { operators: 'llm' } },
          ],
        }),
      ),
    ),
  ).toContain('spec.tasks[0].search.operators');
});

test('a job override keeps the suite’s value of every option it does not name', async () => {
  const s = spec({
    tasks: [
      {
        id: 'or3',
        suite: 'benchmarks/suites/binpacking-or3',
        search: { seed: 5 },
        limits: { maxEvaluations: 7 },
      },
    ],
  });
  const plan = (await driver.plan(s, {} as never)) as {
    input: { task: Record<string, unknown> };
  }[];
  expect(plan[0]?.input.task['search']).toEqual({ seed: 5 });
  expect(plan[0]?.input.task['limits']).toEqual({ maxEvaluations: 7 });
});
