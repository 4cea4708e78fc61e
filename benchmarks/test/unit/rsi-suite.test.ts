import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { errorCode } from '@troupe/proto';
import { parseWith } from '@troupe/proto';
import { RsiConfigSchema } from '../../src/rsi/rsi-driver';
import { DEFAULT_PHASE1_BRIEF, loadRsiSuite } from '../../src/rsi/rsi-suite';

// The rsi driver's suite file: the shipped suite loads; a bad one is refused naming the file and
// the field, whatever is wrong with it.

const REPO = path.resolve(__dirname, '../../..');
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rsi-suite-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function suite(name: string, yaml: string): string {
  mkdirSync(path.join(dir, name));
  writeFileSync(path.join(dir, name, 'tasks.yaml'), yaml);
  return name;
}

async function refusal(name: string): Promise<string> {
  try {
    await loadRsiSuite(name, dir, 'spec.tasks');
  } catch (err) {
    expect(errorCode(err)).toBe('INVALID_ARGUMENT');
    return String(err);
  }
  throw new Error('the suite loaded');
}

test('the shipped rsi-shell-mini suite loads', async () => {
  const s = await loadRsiSuite('benchmarks/suites/rsi-shell-mini', REPO, 'spec.tasks');
  expect(s.dev.map((t) => t.id)).toEqual(['greeting', 'count-lines']);
  expect(s.heldOut.map((t) => t.id)).toEqual(['farewell', 'count-words']);
  expect(Object.keys(s.seedBank)).toEqual(['README.md']);
  expect(s.phase1Brief).toContain('busybox sandbox');
});

test('a suite without phase1Brief gets the default brief; an empty one is refused', async () => {
  const name = suite(
    'no-brief',
    'dev: [{id: a, instruction: x, evaluator: "true"}]\nheldOut: [{id: b, instruction: y, evaluator: "true"}]\n',
  );
  expect((await loadRsiSuite(name, dir, 'spec.tasks')).phase1Brief).toBe(DEFAULT_PHASE1_BRIEF);
  suite(
    'empty-brief',
    'phase1Brief: " "\ndev: [{id: a, instruction: x, evaluator: "true"}]\nheldOut: [{id: b, instruction: y, evaluator: "true"}]\n',
  );
  expect(await refusal('empty-brief')).toContain('phase1Brief: must not be empty');
});

test('spec.config.phase1 has defaults; maxWaves 0 skips practice; bad values name the field', async () => {
  const models = { actor: 'a', verifier: 'v', curriculum: 'c' };
  expect(parseWith(RsiConfigSchema, { models }).phase1).toEqual({
    maxWaves: 3,
    concurrency: 2,
    maxProjectsPerWave: 4,
  });
  expect(parseWith(RsiConfigSchema, { models, phase1: { maxWaves: 0 } }).phase1.maxWaves).toBe(0);
  const refused = (config: unknown) => {
    try {
      parseWith(RsiConfigSchema, config, { prefix: 'spec.config' });
    } catch (err) {
      expect(errorCode(err)).toBe('INVALID_ARGUMENT');
      return String(err);
    }
    throw new Error('the config was accepted');
  };
  expect(refused({ models, phase1: { concurrency: 0 } })).toContain(
    'spec.config.phase1.concurrency',
  );
  expect(refused({ models, phase1: { waves: 2 } })).toContain('spec.config.phase1');
});

test.each([
  ['missing', null, 'spec.tasks.suite'],
  ['no-heldout', 'dev: [{id: a, instruction: x, evaluator: "true"}]\nheldOut: []\n', 'heldOut'],
  [
    'shared-id',
    'dev: [{id: a, instruction: x, evaluator: "true"}]\nheldOut: [{id: a, instruction: y, evaluator: "true"}]\n',
    'heldOut[0].id',
  ],
  [
    'bad-setup',
    'dev: [{id: a, instruction: x, evaluator: "true", setup: {files: {"../x": y}}}]\nheldOut: [{id: b, instruction: y, evaluator: "true"}]\n',
    'must not contain ".." segments',
  ],
  ['bad-yaml', 'dev: [unclosed\n', 'tasks.yaml'],
])('%s is refused naming the field', async (name, yaml, field) => {
  if (yaml !== null) suite(name, yaml);
  expect(await refusal(name)).toContain(field);
});
