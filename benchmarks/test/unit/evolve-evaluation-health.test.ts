import { InMemoryJournalStore, type JournalRecord, type NodeRecord } from '@troupe/evolve';
import { EvaluationHealth, failureOf } from '../../src/evolve/evaluation-health';
import { ObservingJournal } from '../../src/evolve/observing-journal';
import { withStderr } from '../../src/evolve/run-sandbox-evaluation';

const SEED = 'X = 0.5  # troupe:param float[0,1]\nprint(X)\n';

function node(over: Partial<NodeRecord> & Pick<NodeRecord, 'attemptId'>): NodeRecord {
  return {
    type: 'node',
    taskId: 't',
    generation: 0,
    slot: 0,
    depth: 0,
    try: 0,
    island: 0,
    operator: 'seed',
    parentIds: [],
    program: { language: 'python', source: SEED },
    codeHash: 'h',
    outcome: 'unscored',
    result: null,
    error: null,
    costUsd: 0,
    infraRetries: 1,
    timings: { startedAt: 0, opMs: 0, queueMs: 0, evalMs: 0, totalMs: 0 },
    ...over,
  };
}

const taskRecord = (includeSeeds = true): JournalRecord => ({
  type: 'task',
  taskId: 't',
  config: { includeSeeds } as never,
  seeds: [{ language: 'python', source: SEED }],
  createdAt: 0,
});

const TRACEBACK =
  'Traceback (most recent call last):\n  File "evaluate.py", line 7\nZeroDivisionError: division by zero\n';

test("an evaluator failure's message carries the grader's stderr tail", () => {
  expect(withStderr('evaluator exited with status 1', TRACEBACK)).toBe(
    `evaluator exited with status 1; evaluator stderr: ${TRACEBACK.trim()}`,
  );
  expect(withStderr('evaluator exited with status 1', '  \n')).toBe(
    'evaluator exited with status 1',
  );
  expect(withStderr('x', 'a'.repeat(2000)).length).toBeLessThan(600);
});

test('a grader that crashes on the seed fails the seed with its traceback', () => {
  const health = new EvaluationHealth();
  health.observe(taskRecord());
  expect(health.seedFailure()).toBeUndefined();
  health.observe(
    node({
      attemptId: 't:g0:s0:d0:t0',
      error: `UNAVAILABLE: ${withStderr('evaluator exited with status 1', TRACEBACK)}`,
    }),
  );
  const seed = health.seedFailure();
  expect(seed?.index).toBe(0);
  expect(seed?.failure.outcome).toBe('unscored');
  expect(seed?.failure.text).toContain('ZeroDivisionError: division by zero');
  expect(seed?.failure.text).not.toContain('\n');
  expect(seed?.failure.headline).toBe('ZeroDivisionError: division by zero');
  expect(health.failures).toBe(1);
  expect(health.evaluatorFailures).toBe(1);
  expect(health.lastFailure?.text).toContain('evaluator exited with status 1');
});

test('a buggy seed names its status, reason and stderr; a scored seed is fine', () => {
  const buggy = node({
    attemptId: 'a',
    outcome: 'buggy',
    result: {
      status: 'invalid',
      score: null,
      signature: [],
      metrics: { reason: 'printed 1 number, expected 2' },
      stderrTail: 'warning: x\n',
      evalMs: 3,
      evaluatorVersion: 'v',
    },
  });
  expect(failureOf(buggy)?.text).toBe('invalid: printed 1 number, expected 2; stderr: warning: x');
  expect(failureOf(buggy)?.headline).toBe('invalid: printed 1 number, expected 2 (warning: x)');
  const health = new EvaluationHealth();
  health.observe(taskRecord());
  health.observe(
    node({
      attemptId: 'b',
      outcome: 'scored',
      result: { ...buggy.result!, status: 'ok', score: 1, metrics: {} },
    }),
  );
  // A later failing draft is counted, but the seed scored.
  health.observe(node({ attemptId: 'c', operator: 'draft', error: 'UNAVAILABLE: boom' }));
  expect(health.seedFailure()).toBeUndefined();
  expect(health.failures).toBe(1);
  expect(health.lastFailure?.text).toBe('UNAVAILABLE: boom');
});

test('no seed check without seed evaluations; records are counted once', async () => {
  const health = new EvaluationHealth();
  const journal = new ObservingJournal(new InMemoryJournalStore(), (r) => health.observe(r));
  health.observe(taskRecord(false));
  const failed = node({ attemptId: 'd', error: 'UNAVAILABLE: boom' });
  await journal.append(failed);
  await journal.read('t');
  await journal.read('t');
  expect(health.failures).toBe(1);
  expect(health.seedFailure()).toBeUndefined();
});
