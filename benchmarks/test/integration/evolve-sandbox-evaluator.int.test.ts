import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { ActorSystem } from '@troupe/actors';
import type { EvaluatorResult } from '@troupe/evolve';
import {
  EvaluatorGrantSchema,
  loadSuiteBundle,
  type SuiteBundle,
  SandboxEvaluatorPool,
  serveEvaluatorLeases,
} from '../../src/evolve';
import { TestCluster } from '@troupe/test-cluster';
import { leaseSubject } from '@troupe/proto';

// The evaluator contract in the driver's real path: candidates run by the suite's trusted
// evaluator inside the node agent's Docker sandboxes (no network, hard kill at the deadline).
// Each hostile or broken candidate gets the right status and never a score.

jest.setTimeout(300_000);

let bundle: SuiteBundle;

let tc: TestCluster;
let system: ActorSystem;
let pool: SandboxEvaluatorPool;
let listener: Server;
let connections = 0;
let gateway = '172.17.0.1';

beforeAll(async () => {
  bundle = await loadSuiteBundle(path.resolve(__dirname, 'evolve-fixtures/quick-suite'), 'suite');
  tc = await TestCluster.start({ nodeAgent: { shutdownGraceMs: 1_000 } });
  const bridge = (await tc.docker.getNetwork('bridge').inspect()) as {
    IPAM?: { Config?: { Gateway?: string }[] };
  };
  gateway = bridge.IPAM?.Config?.[0]?.Gateway ?? gateway;
  listener = createServer((s) => {
    connections++;
    s.end('0.3 0.7\n');
  });
  await new Promise<void>((r) => listener.listen(0, '0.0.0.0', r));
  system = await ActorSystem.start({ cluster: tc.cluster, connection: tc.nc });
  pool = new SandboxEvaluatorPool({
    refs: system,
    jobId: 'contract',
    resourceId: `contract-${tc.cluster.slice(-6)}`,
    slots: 2,
    suite: bundle.spec,
    files: bundle.files,
    log: system.log,
  });
});

afterAll(async () => {
  await pool?.destroyCreated().catch(() => undefined);
  await system?.shutdown({ graceMs: 500 }).catch(() => undefined);
  await tc?.stop();
  listener?.close();
});

async function evaluate(source: string, timeoutMs = 20_000): Promise<EvaluatorResult> {
  return pool.evaluate(
    {
      program: { language: 'python', source },
      phase: 'validation',
      attemptId: `a-${Math.random().toString(36).slice(2)}`,
      timeoutMs,
      infraRetry: 0,
    },
    { signal: AbortSignal.timeout(120_000) },
  );
}

test('a valid candidate is scored by the evaluator from its raw output', async () => {
  const r = await evaluate('print(0.3, 0.6)');
  expect(r.status).toBe('ok');
  expect(r.score).toBeCloseTo(-0.01, 9);
  expect(r.evaluatorVersion).toBe('quick-suite/1');
});

test('a candidate that opens a socket reaches nothing: no score, and no connection arrived', async () => {
  const port = (listener.address() as { port: number }).port;
  const source = [
    'import socket',
    `s = socket.create_connection(("${gateway}", ${port}), timeout=3)`,
    'print(s.recv(100).decode())',
  ].join('\n');
  const r = await evaluate(source);
  expect(r.status).toBe('error');
  expect(r.score).toBeNull();
  expect(r.stderrTail).toMatch(/Network is unreachable|OSError|timed out|refused/);
  expect(connections).toBe(0);
});

test.each([
  ['prints a score instead of its output', 'invalid', 'print("score: 1.0")'],
  ['returns NaN', 'invalid', 'print(float("nan"), 0.7)'],
  ['returns infinity', 'invalid', 'print("inf 0.7")'],
  ['crashes', 'error', 'raise SystemExit(3)'],
])('a candidate that %s gets %s and no score', async (_what, status, source) => {
  const r = await evaluate(source);
  expect(r.status).toBe(status);
  expect(r.score).toBeNull();
});

test('a candidate that loops forever is a timeout', async () => {
  const r = await evaluate('while True:\n    pass', 4_000);
  expect(r.status).toBe('timeout');
  expect(r.score).toBeNull();
});

test('a candidate that freezes its evaluator is killed at the deadline: timeout, the slot works after', async () => {
  const started = Date.now();
  const r = await evaluate('import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)', 4_000);
  expect(r.status).toBe('timeout');
  expect(r.score).toBeNull();
  expect(Date.now() - started).toBeLessThan(60_000);
  const next = await evaluate('print(0.3, 0.7)');
  expect(next.status).toBe('ok');
});

test('per-evaluation leases: FIFO across steps, never more than the slots, cancel drops a queued request, an ended step returns its sandboxes and drops its queue', async () => {
  const subject = leaseSubject(tc.cluster, `leases${tc.cluster.slice(-6)}`);
  const { nc } = tc;
  const sub = serveEvaluatorLeases(nc, subject, pool, system.log);
  const granted: string[] = [];
  let n = 0;
  const acquire = (stepId: string): { requestId: string; reply: Promise<unknown> } => {
    const requestId = `r${n++}`;
    const reply = nc
      .request(
        subject,
        JSON.stringify({ op: 'acquire', stepId, attemptId: `${stepId}-a`, requestId }),
        {
          timeout: 120_000,
        },
      )
      .then((m) => {
        const grant = EvaluatorGrantSchema.parse(JSON.parse(m.string()));
        if ('evaluator' in grant) granted.push(`${stepId}:${grant.evaluator}`);
        return grant;
      });
    return { requestId, reply };
  };
  try {
    for (const s of ['a', 'b', 'c', 'd']) pool.openStep(s);
    // Step a takes both slots; b, c, d queue in order.
    const a1 = acquire('a');
    const a2 = acquire('a');
    await Promise.all([a1.reply, a2.reply]);
    const b1 = acquire('b');
    const c1 = acquire('c');
    const d1 = acquire('d');
    const d2 = acquire('d');
    d2.reply.catch(() => undefined); // never answered: cancelled, then dropped
    await nc.flush();
    expect(granted).toHaveLength(2);
    // d cancels its second request: it is never granted.
    nc.publish(subject, JSON.stringify({ op: 'cancel', stepId: 'd', requestId: d2.requestId }));
    // a gives one back by release: the first in the queue (b) gets it.
    const aIds = granted.map((g) => g.split(':')[1] as string);
    nc.publish(subject, JSON.stringify({ op: 'release', stepId: 'a', evaluator: aIds[0] }));
    await b1.reply;
    expect(granted[2]).toMatch(/^b:/);
    // a "dies": ending its step returns the sandbox it still holds, to c (next in line).
    pool.endStep('a');
    await c1.reply;
    expect(granted[3]).toMatch(/^c:/);
    expect(granted).toHaveLength(4);
    // Releasing a sandbox a step does not hold is ignored (no slot is created out of thin air).
    nc.publish(subject, JSON.stringify({ op: 'release', stepId: 'a', evaluator: aIds[1] }));
    // b ends with its sandbox: d's first request gets it; its cancelled second one never does.
    pool.endStep('b');
    await d1.reply;
    expect(granted[4]).toMatch(/^d:/);
    // A queued request of a step that ends is dropped; a step that ended gets CANCELLED.
    const d3 = acquire('d');
    await nc.flush();
    pool.endStep('d');
    pool.endStep('c');
    expect(await acquire('a').reply).toEqual({
      error: expect.objectContaining({ code: 'CANCELLED' }),
    });
    expect(await d3.reply).toEqual({ error: expect.objectContaining({ code: 'CANCELLED' }) });
    expect(granted).toHaveLength(5);
    // Every slot is back: a malformed request is answered with the field, and the pool still
    // evaluates.
    const bad = EvaluatorGrantSchema.parse(
      JSON.parse(
        (
          await nc.request(subject, JSON.stringify({ op: 'acquire', stepId: 'x' }), {
            timeout: 10_000,
          })
        ).string(),
      ),
    );
    expect(bad).toEqual({ error: expect.objectContaining({ code: 'INVALID_ARGUMENT' }) });
    expect('error' in bad && bad.error.message).toMatch(/attemptId/);
    const [r1, r2] = await Promise.all([evaluate('print(0.3, 0.6)'), evaluate('print(0.3, 0.6)')]);
    expect([r1.status, r2.status]).toEqual(['ok', 'ok']);
  } finally {
    sub.unsubscribe();
  }
});
