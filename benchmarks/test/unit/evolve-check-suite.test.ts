import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { errorCode } from '@troupe/proto';
import { checkSuite, dryRunTask } from '../../src/evolve';

jest.setTimeout(60_000);

const QUICK = path.resolve(__dirname, '../integration/evolve-fixtures/quick-suite');
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'evolve-check-suite-'));
  await cp(QUICK, dir, { recursive: true });
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function failure(fn: () => Promise<unknown>): Promise<string> {
  try {
    await fn();
  } catch (err) {
    expect(errorCode(err)).toBe('INVALID_ARGUMENT');
    return (err as Error).message;
  }
  throw new Error('expected INVALID_ARGUMENT');
}

test('a sound suite: its layout, files and marked parameters', async () => {
  const check = await checkSuite(dir, 'suite');
  expect(check).toMatchObject({ name: 'quick-suite', files: 1 });
  expect(check.seeds).toEqual([{ file: 'seed/program.py', params: ['X', 'Y'] }]);
});

test('a seed without markers is refused for built-in operators', async () => {
  await writeFile(path.join(dir, 'seed', 'program.py'), 'print(0.3, 0.7)\n');
  expect(await failure(() => checkSuite(dir, 'suite'))).toMatch(
    /seed seed\/program\.py \(task\.yaml seeds\[0\]\) has no troupe:param marker/,
  );
});

test('a broken marker names the seed and the line', async () => {
  await writeFile(path.join(dir, 'seed', 'program.py'), 'X = 2  # troupe:param float[0,1]\n');
  expect(await failure(() => checkSuite(dir, 'suite'))).toMatch(/seed seed\/program\.py.*line 1/);
});

test('a missing phase folder is named', async () => {
  await rm(path.join(dir, 'grader'), { recursive: true });
  expect(await failure(() => checkSuite(dir, 'suite'))).toMatch(/phase file grader does not exist/);
});

test('the dry run evaluates the seeds once and nothing else', () => {
  expect(
    dryRunTask({ id: 't', suite: dir, limits: { maxEvaluations: 99 }, search: { seed: 3 } }, 2),
  ).toEqual({
    id: 't',
    suite: dir,
    limits: { maxEvaluations: 2, maxGenerations: 1 },
    search: {
      operators: 'builtin',
      includeSeeds: true,
      draftsPerIsland: 0,
      islands: 1,
      testPhase: false,
    },
  });
});
