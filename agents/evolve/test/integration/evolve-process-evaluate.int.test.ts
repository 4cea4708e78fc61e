import { type EvaluationRequest } from '../../src/evaluation-request';
import { createProcessEvaluate } from './process-evaluate';

// The test-only process evaluator: hard kill at the deadline, infrastructure failures, queueing.

const request = (timeoutMs = 5_000): EvaluationRequest => ({
  program: { language: 'python', source: 'print(1)\n' },
  phase: 'validation',
  attemptId: 'a',
  timeoutMs,
  infraRetry: 0,
});
const ok = JSON.stringify({
  status: 'ok',
  score: 1,
  signature: [],
  metrics: {},
  stderrTail: '',
  evalMs: 1,
  evaluatorVersion: 't/1',
});

test('kills the whole process group at the deadline and reports a timeout', async () => {
  const evaluate = createProcessEvaluate({
    command: () => ['sh', '-c', 'sleep 30 & sleep 30; echo never'],
  });
  const started = Date.now();
  const r = await evaluate(request(400), { signal: new AbortController().signal });
  expect(r).toMatchObject({ status: 'timeout', score: null });
  expect(Date.now() - started).toBeLessThan(5_000);
});

test('a failing or silent evaluator is a retryable infrastructure failure', async () => {
  for (const script of ['exit 2', 'echo not-json', 'true']) {
    const evaluate = createProcessEvaluate({ command: () => ['sh', '-c', script] });
    await expect(
      evaluate(request(), { signal: new AbortController().signal }),
    ).rejects.toMatchObject({ code: 'UNAVAILABLE', retryable: true });
  }
});

test('writes the program to a file the command receives, and queues beyond its concurrency', async () => {
  const evaluate = createProcessEvaluate({
    concurrency: 1,
    command: (_req, program) => ['sh', '-c', `test -s "${program}" && sleep 0.3 && echo '${ok}'`],
  });
  const startedAt: number[] = [];
  const t0 = Date.now();
  const results = await Promise.all(
    [0, 1].map(() =>
      evaluate(request(), {
        signal: new AbortController().signal,
        onStart: () => startedAt.push(Date.now() - t0),
      }),
    ),
  );
  expect(results.map((r) => r.status)).toEqual(['ok', 'ok']);
  // The second evaluation started only after the first finished (about 0.3 s later).
  expect(startedAt[1]! - startedAt[0]!).toBeGreaterThanOrEqual(250);
});

test('an abort kills the evaluator and rejects with the reason', async () => {
  const evaluate = createProcessEvaluate({ command: () => ['sleep', '30'] });
  const ac = new AbortController();
  const pending = evaluate(request(), { signal: ac.signal });
  setImmediate(() => ac.abort(new Error('shutdown')));
  await expect(pending).rejects.toThrow('shutdown');
});
