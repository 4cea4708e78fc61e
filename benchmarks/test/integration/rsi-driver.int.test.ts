import path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ActorSystem } from '@troupe/actors';
import { createAgentActor, TrajectoryStore } from '@troupe/agents';
import { type JobEventRecord } from '@troupe/coordinator';
import { LlmClient } from '@troupe/llm';
import { errorCode } from '@troupe/proto';
import { BankStore, type Phase1Result, StudyRecords, type WaveRecord } from '@troupe/rsi';
import { FakeOpenAI } from '@troupe/testkit';
import { TestCluster } from '@troupe/test-cluster';
import { createRsiDriver, rsiBankId } from '../../src';
import {
  bankWith,
  LESSON_TEXT,
  readRequest as read,
  rsiScript as script,
  WORK,
} from './rsi-fixtures/rsi-script';
import { rsiModelRegistry } from './rsi-fixtures/study-harness';

// The `rsi` driver end to end on the shipped rsi-shell-mini suite: a real coordinator, node
// agent (Docker sandboxes) and agent host; every role's model is the testkit's FakeOpenAI,
// scripted per role (rsi-fixtures/rsi-script.ts). Phase 1's Curriculum publishes one wave of two
// practice projects, each practised in its own sandbox from the seed and committed in order, then
// READY; Phase 2 develops the bank on both development tasks (each PASS teaches a
// lesson, each output bank the next input), Phase 3 runs the held-out tasks' Actors on the frozen
// bank and scores them with the suite's evaluators: the scripted Actor gets one right and one
// wrong, so the mean is 0.5 — computed from the machines, not from what the Actor claims.

jest.setTimeout(600_000);

const REPO = path.resolve(__dirname, '../../..');
const SUITE = 'benchmarks/suites/rsi-shell-mini';

let fake: FakeOpenAI;
let tc: TestCluster;
let nc: NatsConnection;
let host: ActorSystem;

beforeAll(async () => {
  fake = await FakeOpenAI.start();
  const registry = rsiModelRegistry(fake);
  tc = await TestCluster.start({
    coordinator: { drivers: [createRsiDriver({ models: registry, baseDir: REPO })] },
    nodeAgent: { slots: { sandbox: 4, evaluator: 0 } },
  });
  nc = await connect({ servers: tc.server.url });
  const trajectories = new TrajectoryStore({ connection: nc, cluster: tc.cluster });
  host = await ActorSystem.start({
    cluster: tc.cluster,
    connection: nc,
    hostId: `agents-${tc.cluster.slice(-6)}`,
    hosting: [
      createAgentActor({
        llm: new LlmClient({ registry, retry: { maxAttempts: 1 } }),
        trajectories,
      }),
    ],
    placement: 'none',
  });
  await tc.waitForHost(host.hostId);
}, 180_000);

afterAll(async () => {
  await host?.shutdown({ graceMs: 1_000 }).catch(() => undefined);
  await nc?.close().catch(() => undefined);
  await tc?.stop();
  await fake?.close();
});

test('a study develops the bank on the dev tasks and measures it on the held-out ones', async () => {
  fake.setHandler(script);
  const jobs = tc.coordinator.jobs!;
  const record = await jobs.submit({
    spec: {
      kind: 'rsi',
      taskTimeoutMs: 500_000,
      config: { models: { actor: 'actor', verifier: 'verifier', curriculum: 'curriculum' } },
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
  expect(study.score).toBe(0.5);
  const details = study.details as {
    bankId: string;
    seedTreeHash: string;
    phase1TreeHash: string;
    phase1Waves: number;
    phase1Ended: string;
    frozenTreeHash: string;
    frozenVersion: number;
    phase2: { task: string; status: string; verdict: string; bankIn: string; bankOut: string }[];
    scored: number;
    unscored: number;
    links: Record<string, string>;
  };
  expect(details.bankId).toBe(rsiBankId(record.jobId));
  expect(details.phase2.map((t) => [t.task, t.status, t.verdict])).toEqual([
    ['greeting', 'passed', 'PASS'],
    ['count-lines', 'passed', 'PASS'],
  ]);
  // The lineage: seed → the wave's output → greeting's output → count-lines' output = frozen,
  // each hash the one of the files the scripted lessons add.
  const seed = bankWith();
  const afterWave = bankWith('practice-p1', 'practice-p2');
  const afterGreeting = bankWith('practice-p1', 'practice-p2', 'greeting');
  const frozenBank = bankWith('practice-p1', 'practice-p2', 'greeting', 'count-lines');
  expect(details.seedTreeHash).toBe(seed.treeHash);
  expect([details.phase1TreeHash, details.phase1Waves, details.phase1Ended]).toEqual([
    afterWave.treeHash,
    1,
    'READY',
  ]);
  expect(details.phase2[0]?.bankIn).toBe(afterWave.treeHash);
  expect(details.phase2[0]?.bankOut).toBe(afterGreeting.treeHash);
  expect(details.phase2[1]?.bankIn).toBe(afterGreeting.treeHash);
  expect(details.phase2[1]?.bankOut).toBe(frozenBank.treeHash);
  expect([details.frozenTreeHash, details.frozenVersion]).toEqual([frozenBank.treeHash, 4]);
  expect([details.scored, details.unscored]).toEqual([2, 0]);
  expect(Object.keys(details.links).sort()).toEqual(['phase1', 'phase2', 'phase3', 'report']);
  // The report shows the wave's branches and each development task's cycle.
  const reader = await jobs.artifact(record.jobId, details.links['report']!);
  const chunks: Uint8Array[] = [];
  for await (const c of reader.chunks) chunks.push(c);
  const html = Buffer.concat(chunks).toString('utf8');
  expect(html).toContain(
    `<h3>Wave 1: v1 ${seed.treeHash.slice(0, 12)} → v2 ${afterWave.treeHash.slice(0, 12)}</h3>`,
  );
  expect(html).toContain('<td>practice/p2</td>');
  expect(html).toContain('<h3>1. greeting — passed</h3>');
  expect(html).toContain('<h3>2. count-lines — passed</h3>');
  expect(html.match(/<td>attempt 1<\/td>/g)).toHaveLength(2);
  expect(html).not.toContain('No per-cycle log');

  // The frozen bank holds the seed and all four lessons, and verifies.
  const banks = await BankStore.open(nc, { cluster: tc.cluster });
  const frozen = await banks.load(details.bankId, 'head', {
    expectTreeHash: details.frozenTreeHash,
  });
  expect(frozen.bank.paths).toEqual([
    'README.md',
    'lessons/count-lines.md',
    'lessons/greeting.md',
    'lessons/practice-p1.md',
    'lessons/practice-p2.md',
  ]);
  // Phase 1's records: one wave from the seed (v1) to v2, both branches practised from the same
  // snapshot and committed in the Curriculum's order; then READY.
  const records = new StudyRecords(banks.kv, details.bankId);
  const wave = await records.get<WaveRecord>('phase1', 'wave-1');
  expect(wave?.input).toMatchObject({ version: 1, treeHash: seed.treeHash });
  expect(wave?.output).toMatchObject({ version: 2, treeHash: afterWave.treeHash });
  expect(
    wave?.branches.map((b) => [
      b.index,
      b.project,
      b.verdict,
      b.committed,
      b.changed,
      b.bankBefore,
    ]),
  ).toEqual([
    [1, 'practice/p1', 'PASS', true, ['lessons/practice-p1.md'], seed.treeHash],
    [2, 'practice/p2', 'PASS', true, ['lessons/practice-p2.md'], seed.treeHash],
  ]);
  expect(wave?.branches.map((b) => b.bankAfter)).toEqual([
    bankWith('practice-p1').treeHash,
    bankWith('practice-p2').treeHash,
  ]);
  expect(wave?.branches[0]?.report).toContain('the file is there');
  expect(await records.get('phase1', 'wave-2')).toBeUndefined();
  const ready = await records.get<Phase1Result>('phase1', 'ready');
  expect(ready).toEqual({ output: wave?.output, waves: 1, ended: 'READY' });
  // The wave's commit carries its record (lean: no reports), for adoption after a crash.
  const v2 = await banks.getCommit(details.bankId, { version: 2 });
  expect([v2.role, v2.message.startsWith('rsi phase1 ')]).toEqual(['phase1', true]);
  expect(v2.message).not.toContain('the file is there');

  const requests = fake.chatRequests.map((r) => ({ ...read(r), body: JSON.stringify(r.body) }));
  // Phase 3's Actors saw the frozen bank's inventory, and no held-out task was learned from.
  const heldOut = requests.filter((r) => r.role === 'actor' && r.task.includes('wc.txt'));
  expect(heldOut.length).toBeGreaterThan(0);
  for (const r of heldOut) expect(r.task).toContain('lessons/greeting.md');
  expect(
    requests.some(
      (r) => r.task.includes('Propose what it should keep') && r.task.includes('wc.txt'),
    ),
  ).toBe(false);
  // Phase 1's Curriculum: two turns (the wave, then READY after seeing the wave's record); it
  // never saw a development or held-out task.
  const p1 = requests.filter((r) => r.role === 'phase1-curriculum');
  expect(p1.map((r) => r.task.includes('No wave has run yet.'))).toEqual([true, false]);
  expect(p1[1]?.task).toContain('Wave 1: bank');
  for (const r of p1) {
    for (const [file] of WORK.slice(0, 4)) expect(r.body).not.toContain(file);
  }
  // Each practice Actor worked from the seed snapshot: neither saw the other branch's lesson.
  const practice = requests.filter(
    (r) => r.role === 'actor' && r.task.includes('Practice project'),
  );
  expect(practice.length).toBeGreaterThanOrEqual(2);
  for (const r of practice) {
    expect(r.task).toContain('README.md');
    expect(r.task).not.toContain('lessons/');
  }
  // No Verifier request holds Actor messages, bank paths or bank content.
  const verifier = requests.filter((r) => r.role === 'verifier');
  expect(verifier.length).toBeGreaterThanOrEqual(6);
  for (const r of verifier) {
    expect(r.body).not.toContain('wrote the file');
    expect(r.body).not.toContain(LESSON_TEXT.trim());
    expect(r.body).not.toContain('lessons/');
    expect(r.body).not.toContain('/bank');
    for (const [, , command] of WORK)
      expect(r.body).not.toContain(JSON.stringify(command).slice(1, -1));
  }
  // No role ever saw an evaluator.
  for (const r of requests) expect(r.body).not.toContain('tr -d');
});

test('a study naming a model the cluster does not have is refused, naming the field', async () => {
  const err = await tc.coordinator
    .jobs!.submit({
      spec: {
        kind: 'rsi',
        config: { models: { actor: 'actor', verifier: 'gpt-nope', curriculum: 'curriculum' } },
        tasks: { suite: SUITE },
      },
    })
    .catch((e: unknown) => e);
  expect(errorCode(err)).toBe('INVALID_ARGUMENT');
  expect(String(err)).toContain('spec.config.models.verifier');
});
