import path from 'node:path';
import { loadSuiteBundle } from '../../src/evolve';
import { searchConfigOf } from '../../src/evolve/evolve-driver';

// Issue 20 item 8: a user's own suite never fails silently. Each defect is reproduced here first.

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
