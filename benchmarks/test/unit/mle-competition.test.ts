import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { TroupeError } from '@troupe/proto';
import {
  candidateFiles,
  expandCompetitionTasks,
  loadMleCompetition,
  medalOf,
  phaseShipment,
} from '../../src/evolve';

// The MLE-bench competition loader against a fixture competition: what each phase ships to the
// candidate and to the grader, and bad layouts refused naming the file.

const FIXTURE = path.resolve(__dirname, '../integration/evolve-fixtures/mle-competition');
const SUITE = path.resolve(__dirname, '../../suites/mle-mini');

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'mle-loader-'));
  await cp(FIXTURE, dir, { recursive: true });
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const text = (b64: string | undefined): string => Buffer.from(b64 ?? '', 'base64').toString('utf8');
const column = (csv: string, name: string): string[] => {
  const [header, ...rows] = csv.trim().split('\n');
  const i = header!.split(',').indexOf(name);
  return i < 0 ? [] : rows.map((r) => r.split(',')[i]!);
};

async function refusal(promise: Promise<unknown>): Promise<TroupeError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TroupeError);
  const t = err as TroupeError;
  expect(t.code).toBe('INVALID_ARGUMENT');
  expect(t.details?.['field']).toBe('spec.tasks[0].suite');
  return t;
}

test('a competition loads as a sealed suite: direction, thresholds, seed', async () => {
  const b = await loadMleCompetition(dir, 'spec.tasks[0].suite');
  expect(b.spec.name).toBe('fixture-competition');
  expect(b.spec.direction).toBe('maximise');
  expect(b.spec.reference).toEqual({ gold: 0.9, silver: 0.8, bronze: 0.7, median: 0.5 });
  expect(b.spec.evaluator.sealed?.output).toBe('submission.csv');
  expect(b.spec.evaluator.image).toBe('python-slim');
  expect(b.spec.limits.maxEvaluations).toBe(6);
  expect(b.seeds[0]!.source).toContain('troupe:param');
  expect(b.spec.description).toContain('Predict label');
});

test('no phase gives the candidate a label it is scored on; the grader alone gets them', async () => {
  const b = await loadMleCompetition(dir, 'spec.tasks[0].suite');
  for (const phase of ['validation', 'test'] as const) {
    const cand = candidateFiles(b.spec, b.files, phase);
    expect(Object.keys(cand).sort()).toEqual(['sample_submission.csv', 'test.csv', 'train.csv']);
    const scored = column(text(b.files[`answers/${phase}.csv`]), 'id');
    expect(scored.length).toBeGreaterThan(0);
    // The test features have no label column, and no training row is a scored id.
    expect(column(text(cand['test.csv']), 'label')).toEqual([]);
    expect(column(text(cand['test.csv']), 'id').sort()).toEqual([...scored].sort());
    const trainIds = new Set(column(text(cand['train.csv']), 'id'));
    expect(scored.filter((id) => trainIds.has(id))).toEqual([]);
    // What the grader sandbox gets holds the answers; the candidate's folder never does.
    const shipped = phaseShipment(b.spec, b.files, phase);
    expect(Object.keys(shipped)).toContain(`answers/${phase}.csv`);
    expect(b.spec.phases[phase].files.some((f) => f.startsWith('data/'))).toBe(false);
  }
  // The search's held-out rows are public training rows; together they make the whole train.csv.
  const full = column(text(b.files['data/test/train.csv']), 'id');
  const kept = column(text(b.files['data/validation/train.csv']), 'id');
  const held = column(text(b.files['answers/validation.csv']), 'id');
  expect([...kept, ...held].sort()).toEqual([...full].sort());
  // The validation phase never ships the test answers.
  expect(Object.keys(phaseShipment(b.spec, b.files, 'validation'))).not.toContain(
    'answers/test.csv',
  );
});

test.each([
  ['config.yaml', 'the competition config is missing'],
  ['grade.py', 'the grader (grader.grade_fn) is missing'],
  ['prepare.py', 'the prepare step (preparer) is missing'],
  ['description.md', 'the description is missing'],
  ['seed.py', 'the seed program (troupe.seed) is missing'],
  ['prepared/private/answers.csv', 'run the prepare step'],
  ['prepared/public/train.csv', 'run the prepare step'],
  ['prepared/public/sample_submission.csv', 'run the prepare step'],
])('a competition without %s is refused naming the file', async (file, rule) => {
  await rm(path.join(dir, file));
  const err = await refusal(loadMleCompetition(dir, 'spec.tasks[0].suite'));
  expect(err.details?.['file']).toBe(path.join(dir, file));
  expect(err.message).toContain(path.join(dir, file));
  expect(err.message).toContain(rule);
});

test.each([
  [
    'a misspelt config field',
    (c: string) => c.replace('is_lower_better', 'lower_better'),
    'config.yaml',
  ],
  [
    'thresholds out of order',
    (c: string) => c.replace('gold: 0.9', 'gold: 0.1'),
    'thresholds must run gold, silver, bronze, median',
  ],
  [
    'a grade_fn without a function',
    (c: string) => c.replace('grade.py:grade', 'grade.py'),
    'grade_fn',
  ],
])('a config with %s is refused naming config.yaml', async (_what, edit, rule) => {
  const file = path.join(dir, 'config.yaml');
  await writeFile(file, edit(await readFile(file, 'utf8')));
  const err = await refusal(loadMleCompetition(dir, 'spec.tasks[0].suite'));
  expect(err.details?.['file']).toBe(file);
  expect(err.message).toContain(rule);
});

test('answers that do not match the public test ids are refused naming the answers file', async () => {
  const file = path.join(dir, 'prepared/private/answers.csv');
  await writeFile(file, 'id,label\n5,1\n');
  const err = await refusal(loadMleCompetition(dir, 'spec.tasks[0].suite'));
  expect(err.details?.['file']).toBe(file);
  expect(err.message).toContain('same ids');
});

test('a public test.csv that holds the target is refused naming it', async () => {
  const file = path.join(dir, 'prepared/public/test.csv');
  await writeFile(file, 'id,a,b,label\n1000,1,2,0\n');
  const err = await refusal(loadMleCompetition(dir, 'spec.tasks[0].suite'));
  expect(err.details?.['file']).toBe(file);
  expect(err.message).toContain('holds the target column label');
});

test('a grader without grade() is refused naming grade.py', async () => {
  const file = path.join(dir, 'grade.py');
  await writeFile(file, 'def score(a, b):\n    return 0\n');
  const err = await refusal(loadMleCompetition(dir, 'spec.tasks[0].suite'));
  expect(err.details?.['file']).toBe(file);
});

test('the mle-mini suite expands into one task per competition, each loading', async () => {
  const tasks = await expandCompetitionTasks([{ id: 'mle', suite: SUITE }]);
  expect(tasks.map((t) => t.id)).toEqual([
    'mle-cancer-auc',
    'mle-diabetes-mae',
    'mle-digits-logloss',
    'mle-friedman-rmse',
    'mle-synthetic-accuracy',
  ]);
  const metrics = new Set<string>();
  for (const t of tasks) {
    const b = await loadMleCompetition(t.suite, 'suite');
    expect(b.spec.evaluator.sealed).toBeDefined();
    metrics.add(b.spec.direction);
    expect(Object.keys(b.spec.reference).sort()).toEqual(['bronze', 'gold', 'median', 'silver']);
  }
  expect(metrics).toEqual(new Set(['maximise', 'minimise']));
});

test('medals follow the direction of the metric', () => {
  const up = { gold: 0.9, silver: 0.8, bronze: 0.7, median: 0.5 };
  expect(medalOf(0.95, up, 'maximise')).toBe('gold');
  expect(medalOf(0.75, up, 'maximise')).toBe('bronze');
  expect(medalOf(0.6, up, 'maximise')).toBe('above_median');
  expect(medalOf(0.1, up, 'maximise')).toBe('none');
  const down = { gold: 1, silver: 2, bronze: 3, median: 4 };
  expect(medalOf(0.5, down, 'minimise')).toBe('gold');
  expect(medalOf(2.5, down, 'minimise')).toBe('bronze');
  expect(medalOf(9, down, 'minimise')).toBe('none');
  expect(medalOf(null, down, 'minimise')).toBeUndefined();
  expect(medalOf(1, {}, 'minimise')).toBeUndefined();
});
