import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseJobSpec } from '@troupe/coordinator';
import { errorCode, type TroupeError } from '@troupe/proto';
import { createEvolveDriver, loadSuiteBundle } from '../../src/evolve';
import { searchConfigOf } from '../../src/evolve/evolve-driver';

// Issue 20 item 8: a user's own suite never fails silently. Each defect is reproduced here first.

// Suite loading parses task.yaml in a worker thread: slow on a loaded machine.
jest.setTimeout(60_000);

const SUITES = path.resolve(__dirname, '../../suites');

describe("the suite's evaluator.timeoutMs", () => {
  test('is the evaluation deadline (the search defaults do not replace it)', async () => {
    const bundle = await loadSuiteBundle(path.join(SUITES, 'digits-mle'), 'suite');
    expect(bundle.spec.evaluator.timeoutMs).toBe(120_000);
    const config = searchConfigOf({ suite: bundle.spec, task: { id: 't', suite: 'x' } }, undefined);
    expect(config.evaluationTimeoutMs).toBe(120_000);
  });

  test("gives way to a job's own search.evaluationTimeoutMs", async () => {
    const bundle = await loadSuiteBundle(path.join(SUITES, 'binpacking-or3'), 'suite');
    const config = searchConfigOf(
      { suite: bundle.spec, task: { id: 't', suite: 'x', search: { evaluationTimeoutMs: 7_000 } } },
      undefined,
    );
    expect(config.evaluationTimeoutMs).toBe(7_000);
  });
});

describe('suite data too large for a message', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'evolve-big-suite-'));
    await cp(path.resolve(__dirname, '../integration/evolve-fixtures/quick-suite'), dir, {
      recursive: true,
    });
    // 1.5 MiB of validation data: more than one NATS message (1 MiB by default) can carry.
    await writeFile(path.join(dir, 'grader', 'data.bin'), randomBytes(1536 * 1024));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('is refused when the job is validated, naming the suite, the size and the limit', async () => {
    const driver = createEvolveDriver();
    const spec = parseJobSpec({ kind: 'evolve', tasks: [{ id: 'big', suite: dir }] });
    let error: unknown;
    try {
      await driver.validate(spec);
    } catch (err) {
      error = err;
    }
    expect(errorCode(error)).toBe('INVALID_ARGUMENT');
    expect((error as TroupeError).details?.['field']).toBe('spec.tasks[0].suite');
    expect((error as Error).message).toMatch(/grader\/data\.bin/);
    expect((error as Error).message).toMatch(/more than 524288 bytes/);
  });
});
