import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ActorSystem } from '@troupe/actors';
import type { EvaluatorResult } from '@troupe/evolve';
import { ExecReplySchema, SANDBOX_KIND } from '@troupe/node-agent';
import { TestCluster } from '@troupe/test-cluster';
import {
  evaluatorSandboxId,
  graderSandboxId,
  loadMleCompetition,
  SandboxEvaluatorPool,
  type SuiteBundle,
} from '../../src/evolve';

// Sealed labels (issue 20 item 3): an MLE competition's candidate runs alone in its own Docker
// sandbox with features and training data only; its submission is copied out and graded in a
// second sandbox that alone holds the answers. A hostile candidate that searches the whole
// filesystem for the labels it is scored on finds none, in either phase; the same search run
// where the answers are (the grader sandbox) finds them all, so the check can fail.

jest.setTimeout(600_000);

const FIXTURE = path.resolve(__dirname, 'evolve-fixtures/mle-competition');
const ATTACK = path.resolve(__dirname, 'evolve-fixtures/sealed-attack/search-answers.py');

let bundle: SuiteBundle;
let attack: string;
let tc: TestCluster;
let system: ActorSystem;
let pool: SandboxEvaluatorPool;
let resourceId: string;

beforeAll(async () => {
  bundle = await loadMleCompetition(FIXTURE, 'suite');
  attack = await readFile(ATTACK, 'utf8');
  tc = await TestCluster.start({ nodeAgent: { shutdownGraceMs: 1_000 } });
  system = await ActorSystem.start({ cluster: tc.cluster, connection: tc.nc });
  resourceId = `sealed-${tc.cluster.slice(-6)}`;
  pool = new SandboxEvaluatorPool({
    refs: system,
    jobId: 'sealed',
    resourceId,
    slots: 1,
    suite: bundle.spec,
    files: bundle.files,
    log: system.log,
  });
});

afterAll(async () => {
  await pool?.destroyCreated().catch(() => undefined);
  await system?.shutdown({ graceMs: 500 }).catch(() => undefined);
  await tc?.stop();
});

async function evaluate(
  source: string,
  phase: 'validation' | 'test' = 'validation',
  timeoutMs = 30_000,
): Promise<EvaluatorResult> {
  return pool.evaluate(
    {
      program: { language: 'python', source },
      phase,
      attemptId: `a-${Math.random().toString(36).slice(2)}`,
      timeoutMs,
      infraRetry: 0,
    },
    { signal: AbortSignal.timeout(300_000) },
  );
}

function ids(rel: string): string[] {
  const text = Buffer.from(bundle.files[rel]!, 'base64').toString('utf8');
  return text
    .trim()
    .split('\n')
    .slice(1)
    .map((l) => l.split(',')[0]!);
}

function foundOf(stderr: string): { found: number; scanned: number } {
  const m = /found=(\d+) scanned=(\d+)\s*$/.exec(stderr.trim());
  if (!m) throw new Error(`no report in the candidate's stderr: ${stderr.slice(-300)}`);
  return { found: Number(m[1]), scanned: Number(m[2]) };
}

test('the seed is graded in the grader sandbox: a score in [0, 1] in both phases', async () => {
  const seed = bundle.seeds[0]!.source;
  for (const phase of ['validation', 'test'] as const) {
    const r = await evaluate(seed, phase);
    expect(r.status).toBe('ok');
    expect(r.score).toBeGreaterThanOrEqual(0);
    expect(r.score).toBeLessThanOrEqual(1);
    expect(r.metrics['samples']).toBe(ids(`answers/${phase}.csv`).length);
  }
});

test.each(['validation', 'test'] as const)(
  'a candidate searching the whole filesystem finds no label it is scored on (%s phase)',
  async (phase) => {
    const r = await evaluate(attack, phase, 240_000);
    expect(r.status).toBe('ok');
    const { found, scanned } = foundOf(r.stderrTail);
    expect(found).toBe(0);
    // It did walk the filesystem (the image's files and its own data).
    expect(scanned).toBeGreaterThan(500);
    expect(r.stderrTail).toMatch(/label_files=.*\/data\/train\.csv/);
    // Every prediction is the fallback 0: the score is the share of 0 labels, never 1.
    expect(r.score).toBeLessThan(1);
  },
);

test('control: the same search where the answers are (the grader sandbox) finds every one', async () => {
  // The previous evaluations left the validation answers in the grader sandbox's suite folder.
  await evaluate(bundle.seeds[0]!.source, 'validation');
  const grader = system
    .refOf({ kind: SANDBOX_KIND, id: graderSandboxId(evaluatorSandboxId(resourceId, 0)) })
    .withHints({ jobId: 'sealed' });
  await grader.ask(
    'putFiles',
    {
      destDir: '/workspace/control',
      files: {
        'attack.py': attack,
        'test.csv': { base64: bundle.files['data/validation/test.csv']! },
      },
    },
    { timeoutMs: 60_000 },
  );
  const reply = ExecReplySchema.parse(
    await grader.ask(
      'exec',
      { cmd: ['python3', 'attack.py'], cwd: '/workspace/control', timeoutMs: 240_000 },
      { timeoutMs: 300_000 },
    ),
  );
  expect(reply.exitCode).toBe(0);
  expect(foundOf(reply.stderr).found).toBe(ids('answers/validation.csv').length);
});

test.each([
  ['writes no submission', 'invalid', /submission\.csv was not written/, 'print("done")'],
  [
    'writes a submission larger than the bound',
    'invalid',
    /larger than/,
    'open("submission.csv", "w").write("x" * 300000)',
  ],
  [
    'submits the wrong header',
    'invalid',
    /header/,
    'open("submission.csv", "w").write("id,guess\\n")',
  ],
  ['crashes', 'error', /status 3/, 'import sys; sys.stderr.write("boom\\n"); sys.exit(3)'],
])('a candidate that %s gets %s and no score', async (_what, status, reason, source) => {
  const r = await evaluate(source);
  expect(r.status).toBe(status);
  expect(r.score).toBeNull();
  expect(String(r.metrics['reason'])).toMatch(reason);
});
