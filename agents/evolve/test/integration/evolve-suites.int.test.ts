import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { type Evaluate } from '../../src/evaluation-request';
import { createProcessEvaluate } from './process-evaluate';
import {
  type LoadedSearchTask,
  loadSearchTask,
  renderEvaluatorCommand,
} from '../../src/search-task-spec';
import { rewriteTunableParams } from '../../src/tunable-params';

// The shipped suites' trusted evaluators, run on the host's python3 through the test-only
// process evaluator: best fit is reproduced exactly, and every failure mode maps to its status.

const SUITES = path.resolve(__dirname, '../../../../benchmarks/suites');
const signal = () => new AbortController().signal;
// A fresh machine's environment: no PYTHONUNBUFFERED (set on some development hosts and in
// Troupe's Python images), so a candidate's unflushed print stays in its buffer unless the
// grader itself makes the candidate unbuffered.
const { PYTHONUNBUFFERED: _unbuffered, ...FRESH_ENV } = process.env;

function evaluatorFor(task: LoadedSearchTask): Evaluate {
  return createProcessEvaluate({
    env: FRESH_ENV,
    command: (req, program) =>
      renderEvaluatorCommand(task.spec, {
        suite: task.suiteDir,
        program,
        phase: req.phase,
        timeoutMs: req.timeoutMs,
      }),
  });
}

async function grade(
  task: LoadedSearchTask,
  source: string,
  phase: 'validation' | 'test',
  timeoutMs = 30_000,
) {
  return evaluatorFor(task)(
    { program: { language: 'python', source }, phase, attemptId: 'it', timeoutMs, infraRetry: 0 },
    { signal: signal() },
  );
}

describe('binpacking-or3', () => {
  let task: LoadedSearchTask;
  beforeAll(async () => {
    task = await loadSearchTask(path.join(SUITES, 'binpacking-or3'));
  });

  it('the seed (best fit) uses 212.0 bins on OR3, tuned settings fewer', async () => {
    const seed = task.seeds[0]!.source;
    const r = await grade(task, seed, 'test');
    expect(r).toMatchObject({ status: 'ok', score: 212, evaluatorVersion: 'binpacking-online/1' });
    expect(r.signature).toHaveLength(20);
    expect(r.metrics.l1Bound).toBe(201.2);
    const tuned = rewriteTunableParams(seed, {
      LEFTOVER_POWER: 1.6884,
      GAP_LIMIT: 0.2206,
      GAP_PENALTY: 0.4682,
      EXACT_BONUS: 0.1892,
      FILL_WEIGHT: 0.6467,
      NEW_BIN_PENALTY: 0.0555,
    });
    const t = await grade(task, tuned, 'test');
    expect(t.status).toBe('ok');
    expect(t.score!).toBeLessThan(212);
    // The tightest-bin terms (a loose best fit is left for a later item) reach issue 20's goal:
    // a setting a 150-step hill climb on validation found from the defaults (offline).
    const tight = rewriteTunableParams(seed, {
      LEFTOVER_POWER: 0.9969,
      LEFTOVER_WEIGHT: 0.7269,
      GAP_LIMIT: 0.1591,
      GAP_PENALTY: 0.2824,
      EXACT_BONUS: 0.2041,
      FILL_WEIGHT: 0.2656,
      NEW_BIN_PENALTY: 0.091,
      TIGHT_LIMIT: 0.0181,
      TIGHT_BONUS: 109.1,
      TIGHT_PENALTY: 270.3,
    });
    const g = await grade(task, tight, 'test');
    expect(g.status).toBe('ok');
    expect(g.score!).toBeLessThanOrEqual(209.5);
    expect(g.score!).toBeLessThan(t.score!);
    const v = await grade(task, seed, 'validation');
    expect(v.status).toBe('ok');
    expect(v.evalMs).toBeLessThan(3_000);
  });

  it.each([
    ['a reply that is not a bin index', 'print("hello")', 'invalid'],
    [
      'a program that prints a score instead of packing',
      'print("score: 1.0")\nimport sys\nsys.stdin.read()',
      'invalid',
    ],
    ['a crash', 'raise SystemExit(3)', 'error'],
  ])('%s → %s', async (_what, source, status) => {
    const r = await grade(task, source, 'validation');
    expect(r.status).toBe(status);
    expect(r.score).toBeNull();
  });

  it('a bin over capacity is invalid (the evaluator checks every placement)', async () => {
    const everythingInBinZero = [
      'import sys',
      'for line in sys.stdin:',
      '    if line.startswith("item"):',
      '        print(0, flush=True)',
    ].join('\n');
    const r = await grade(task, everythingInBinZero, 'validation');
    expect(r.status).toBe('invalid');
    expect(String(r.metrics.reason)).toContain('does not fit');
  });

  it('a program that hangs is a timeout, reported by the evaluator before the hard kill', async () => {
    const r = await grade(task, 'import time\ntime.sleep(60)', 'validation', 1_500);
    expect(r.status).toBe('timeout');
  });
});

describe('binpacking-weibull', () => {
  it('the seed (best fit) uses 2067.0 bins on Weibull 5k', async () => {
    const task = await loadSearchTask(path.join(SUITES, 'binpacking-weibull'));
    const r = await grade(task, task.seeds[0]!.source, 'test');
    expect(r).toMatchObject({ status: 'ok', score: 2067 });
  });
});

describe('circle-packing-26', () => {
  let task: LoadedSearchTask;
  beforeAll(async () => {
    task = await loadSearchTask(path.join(SUITES, 'circle-packing-26'));
  });

  it('scores the seed by recomputing the sum of radii exactly', async () => {
    const r = await grade(task, task.seeds[0]!.source, 'validation');
    expect(r.status).toBe('ok');
    // The defaults leave the penalty optimisation off: the old 5×5 grid plus 3 small circles.
    expect(r.score!).toBeCloseTo(2.48, 6);
    expect(r.score!).toBeLessThan(2.6358627564);
    expect(r.signature).toHaveLength(26);
  });

  it('the penalty optimisation reaches the goal of issue 20 (sum of radii ≥ 2.60)', async () => {
    // A setting found offline: the defaults with 6000 optimisation steps (1-3 s of python3).
    const tuned = rewriteTunableParams(task.seeds[0]!.source, { OPT_STEPS: 6000 });
    const r = await grade(task, tuned, 'test');
    expect(r.status).toBe('ok');
    expect(r.score!).toBeGreaterThanOrEqual(2.6);
    expect(r.score!).toBeLessThan(2.6358627564);
  });

  it('refuses overlaps even by one part in 10^17, and the wrong number of circles', async () => {
    const touching = [
      'print("0.25 0.5 0.2")',
      'print("0.65 0.5 0.20000000000000001")',
      ...Array.from(
        { length: 24 },
        (_, i) => `print("0.5 ${(0.02 + i * 0.001).toFixed(3)} 0.0001")`,
      ),
    ].join('\n');
    const r = await grade(task, touching, 'validation');
    expect(r.status).toBe('invalid');
    expect(String(r.metrics.reason)).toContain('overlap');
    const few = await grade(task, 'print("0.5 0.5 0.1")', 'validation');
    expect(few.status).toBe('invalid');
  });
});

describe('digits-mle', () => {
  const image = 'troupe-python:latest';
  const run = promisify(execFile);
  beforeAll(async () => {
    const hasImage = await run('docker', ['image', 'inspect', image]).then(
      () => true,
      () => false,
    );
    // scikit-learn lives in the troupe-python image; build it offline on a fresh machine (a few
    // minutes once; cached by the recipe's content hash afterwards).
    if (!hasImage) {
      await run('bash', [path.join(__dirname, '../../../../deploy/images/build.sh'), 'python'], {
        maxBuffer: 64 * 1024 * 1024,
      });
    }
  }, 900_000);

  it('grades the seed on validation and keeps the test labels out of the validation phase', async () => {
    const suite = path.join(SUITES, 'digits-mle');
    const { stdout } = await run('docker', [
      'run',
      '--rm',
      '--network',
      'none',
      '-v',
      `${suite}/grader:/g/grader:ro`,
      '-v',
      `${suite}/seed:/w:ro`,
      image,
      'sh',
      '-c',
      'python3 /g/grader/evaluate.py --program /w/program.py --phase validation; ' +
        'python3 /g/grader/evaluate.py --program /w/program.py --phase test 2>&1 | tail -1',
    ]);
    const [validation, test] = stdout.trim().split('\n');
    expect(JSON.parse(validation!)).toMatchObject({
      status: 'ok',
      evaluatorVersion: 'digits-mle/1',
    });
    expect(JSON.parse(validation!).score).toBeGreaterThan(0.9);
    // Only grader/ was shipped: the test phase cannot find its labels.
    expect(test).toContain('test_labels.csv');
  });
});
