import path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { type JobEventRecord } from '@troupe/coordinator';
import { LlmClient } from '@troupe/llm';
import {
  BankStore,
  MemoryBank,
  type Phase3TaskRecord,
  StudyRecords,
  type WaveRecord,
} from '@troupe/rsi';
import { FakeOpenAI } from '@troupe/testkit';
import { TestCluster } from '@troupe/test-cluster';
import {
  PHASE1_LESSONS,
  roleOf,
  SCRIPTED_LESSONS,
  scriptedStudy,
  SEED_BANK,
} from '../../../perf/rsi-desktop/role-script';
import { createRsiDriver, rsiBankId } from '../../src';
import { rsiModelRegistry } from './rsi-fixtures/study-harness';

// The `rsi` driver on desktop environments, end to end on the shipped rsi-desktop-mini suite: a
// real coordinator and node agent hosting Docker desktops (Xvfb, xterm); every role's model is
// the testkit's FakeOpenAI, scripted per role (perf/rsi-desktop/role-script.ts). Phase 1: the
// Phase-1 Curriculum proposes one wave of one project, practised on a fresh desktop with its
// fixtures (the Verifier confirms it from the machine, the Actor learns: bank v2), then READY.
// Phase 2: the
// Actor fails write-hello (a grounded FAIL, judged by the Verifier from the file on the machine),
// learns, practises the Curriculum's project on a fresh desktop with its fixtures, learns again,
// and passes the fresh attempt. Phase 3 runs the held-out Actors on the frozen bank and scores
// them with desktop-mini's evaluators: one right, one wrong — 0.5 from the machines.

jest.setTimeout(600_000);

const REPO = path.resolve(__dirname, '../../..');
const SUITE = 'benchmarks/suites/rsi-desktop-mini';

let fake: FakeOpenAI;
let tc: TestCluster;
let nc: NatsConnection;

beforeAll(async () => {
  fake = await FakeOpenAI.start();
  const registry = rsiModelRegistry(fake);
  const client = new LlmClient({ registry, retry: { maxAttempts: 1 } });
  tc = await TestCluster.start({
    coordinator: {
      drivers: [createRsiDriver({ models: registry, llm: { client }, baseDir: REPO })],
    },
    nodeAgent: {},
  });
  nc = await connect({ servers: tc.server.url });
}, 300_000);

afterAll(async () => {
  await nc?.close().catch(() => undefined);
  await tc?.stop();
  await fake?.close();
});

type Msg = { role: string; content?: unknown; tool_calls?: { function: { arguments: string } }[] };

/** A request's text: every message's text parts and tool-call arguments, images left out. */
function textOf(messages: Msg[]): string {
  return messages
    .map((m) => {
      const parts = Array.isArray(m.content)
        ? (m.content as { type: string; text?: string }[])
            .filter((p) => p.type === 'text')
            .map((p) => p.text ?? '')
        : [typeof m.content === 'string' ? m.content : ''];
      const args = (m.tool_calls ?? []).map((c) => c.function.arguments);
      return [...parts, ...args].join('\n');
    })
    .join('\n');
}

test('a scripted study practises a Phase-1 wave and runs Phases 2 and 3 on desktops, the Verifier blind to the Actor and the bank', async () => {
  fake.setHandler(scriptedStudy);
  const jobs = tc.coordinator.jobs!;
  const record = await jobs.submit({
    spec: {
      kind: 'rsi',
      taskTimeoutMs: 500_000,
      config: {
        models: { actor: 'actor', verifier: 'verifier', curriculum: 'curriculum' },
        maxAttempts: 3,
        maxProjects: 2,
      },
      tasks: { suite: SUITE },
    },
  });
  const events: JobEventRecord[] = [];
  for await (const e of await jobs.watch(record.jobId, { signal: AbortSignal.timeout(550_000) })) {
    events.push(e);
  }
  expect(events.at(-1)?.type).toBe('JOB_FINISHED');
  const results = await jobs.results(record.jobId);
  const study = results.tasks.find((t) => t.taskId === 'study')!;
  expect([study.status, study.error]).toEqual(['TASK_PASSED', '']);
  const details = study.details as {
    bankId: string;
    seedTreeHash: string;
    phase1TreeHash: string;
    phase1Waves: number;
    phase1Ended: string;
    frozenTreeHash: string;
    frozenVersion: number;
    phase2: { task: string; status: string; verdict: string; attempts: number; projects: number }[];
    meanScore: number;
    scored: number;
    unscored: number;
  };
  expect(details.bankId).toBe(rsiBankId(record.jobId));

  // Bank per phase: the seed (v1); Phase 1's one wave practised warmup/w1 and committed its
  // lesson (v2); Phase 2's write-hello FAIL → practice → PASS taught exactly the two scripted
  // lessons (the passing attempt proposed nothing): the frozen bank, v3.
  const seed = MemoryBank.create({ ...SEED_BANK });
  const ready = MemoryBank.create({ ...SEED_BANK, ...PHASE1_LESSONS });
  const frozen = MemoryBank.create({ ...SEED_BANK, ...PHASE1_LESSONS, ...SCRIPTED_LESSONS });
  expect(details.seedTreeHash).toBe(seed.treeHash);
  expect([details.phase1TreeHash, details.phase1Waves, details.phase1Ended]).toEqual([
    ready.treeHash,
    1,
    'READY',
  ]);
  const banks = await BankStore.open(nc, { cluster: tc.cluster });
  const records = new StudyRecords(banks.kv, details.bankId);
  const wave = await records.get<WaveRecord>('phase1', 'wave-1');
  expect([wave?.input.treeHash, wave?.output.version, wave?.output.treeHash]).toEqual([
    seed.treeHash,
    2,
    ready.treeHash,
  ]);
  expect(wave?.branches).toEqual([
    expect.objectContaining({
      index: 1,
      project: 'warmup/w1',
      status: 'practised',
      verdict: 'PASS',
      committed: true,
      changed: ['lessons/warmup-w1.md'],
    }),
  ]);
  const head = await banks.load(details.bankId, 'head');
  expect(
    Object.fromEntries(head.bank.paths.map((p) => [p, Buffer.from(head.bank.read(p)!).toString()])),
  ).toEqual({ ...SEED_BANK, ...PHASE1_LESSONS, ...SCRIPTED_LESSONS });
  expect([details.frozenVersion, details.frozenTreeHash]).toEqual([3, frozen.treeHash]);
  expect(details.phase2).toEqual([
    expect.objectContaining({
      task: 'write-hello',
      status: 'passed',
      verdict: 'PASS',
      attempts: 2,
      projects: 1,
    }),
  ]);
  const history = await banks.history(details.bankId);
  expect(history.map((c) => [c.version, c.treeHash])).toEqual([
    [1, seed.treeHash],
    [2, ready.treeHash],
    [3, frozen.treeHash],
  ]);

  // Phase 3: desktop-mini's evaluators read the machines — count-lines right, rename-report not.
  expect([details.meanScore, details.scored, details.unscored]).toEqual([0.5, 2, 0]);
  const scores: Record<string, [string, number | undefined, string]> = {};
  for (const id of ['count-lines', 'rename-report']) {
    const r = await records.get<Phase3TaskRecord>('phase3', id);
    scores[id] = [
      r?.status ?? 'missing',
      r?.status === 'scored' ? r.score : undefined,
      r?.bankTreeHash ?? '',
    ];
  }
  expect(scores).toEqual({
    'count-lines': ['scored', 1, frozen.treeHash],
    'rename-report': ['scored', 0, frozen.treeHash],
  });

  // The Verifier: machine evidence only. Its requests hold no Actor message (no text or tool call
  // the Actor produced) and no bank content or path.
  const chats = fake.chatRequests;
  const byRole = (role: string) =>
    chats.filter((r) => roleOf(r) === role).map((r) => r.body.messages as Msg[]);
  const verifier = byRole('verifier');
  expect(verifier.length).toBeGreaterThanOrEqual(8); // four judged machines, two steps each
  const actorOutputs = new Set<string>();
  for (const messages of byRole('actor')) {
    for (const m of messages.filter((x) => x.role === 'assistant')) {
      for (const c of m.tool_calls ?? []) actorOutputs.add(c.function.arguments);
      if (typeof m.content === 'string' && m.content !== '') actorOutputs.add(m.content);
    }
  }
  expect(actorOutputs.size).toBeGreaterThan(5);
  const forbidden = [
    ...actorOutputs,
    ...Object.values(SEED_BANK).map((t) => t.trim()),
    ...Object.values(SCRIPTED_LESSONS).map((t) => t.trim()),
    ...Object.values(PHASE1_LESSONS).map((t) => t.trim()),
    '/tmp/rsi/bank',
  ];
  for (const messages of verifier) {
    const text = textOf(messages);
    for (const f of forbidden) expect(text).not.toContain(f);
  }
  // ... and it judged from the machine: the failing attempt's file held "hello", the Phase-1
  // project's count file "3".
  expect(verifier.some((m) => textOf(m).includes('exit 0\nhello\n'))).toBe(true);
  expect(verifier.some((m) => textOf(m).includes('exit 0\n3\n'))).toBe(true);
  // The Phase-1 Curriculum ran as a desktop role session (FakeOpenAI saw its two turns).
  const phase1Curriculum = chats.filter((r) =>
    textOf((r.body.messages as Msg[]).slice(0, 1)).startsWith('You are the Curriculum of Phase 1'),
  );
  expect(phase1Curriculum.length).toBe(2);
  // The held-out Actors worked with the frozen bank installed; no role saw an evaluator.
  const heldOut = byRole('actor').filter((m) => textOf(m).includes('data.txt'));
  expect(heldOut.length).toBeGreaterThan(0);
  for (const m of heldOut) expect(textOf(m)).toContain(frozen.treeHash);
  for (const r of chats) expect(JSON.stringify(r.body)).not.toContain('renamed');
});
