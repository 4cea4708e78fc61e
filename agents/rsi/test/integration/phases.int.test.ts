import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ErrorCode, ErrorReason, hasErrorCode, hasReason, TroupeError } from '@troupe/proto';
import {
  applyBankChanges,
  BankStore,
  type BankVersion,
  commitKey,
  MemoryBank,
  type Phase2Outcome,
  runPhase1,
  runPhase2,
  runPhase3,
  StudyRecords,
  type WaveRecord,
} from '@troupe/rsi';
import { type NatsServerHandle, randomClusterName, startNatsServer } from '@troupe/testkit';

// RSIAgent's phase boundaries against a real nats-server with JetStream: Phase 2 chains the
// development tasks' banks and freezes the last; a rerun after a crash reuses every accepted
// task (also one whose bank was committed just before the crash) and runs the rest; a target
// that is not transition-ready stops the phase; a conflicting frozen output is refused; Phase 3
// checks disjointness, scores held-out tasks, retries a retryable infrastructure failure on a
// fresh attempt, leaves a persistent or non-retryable one unscored, and
// detects a frozen bank mutated behind its back.

let server: NatsServerHandle;
const connections: NatsConnection[] = [];
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  for (const nc of connections) await nc.close();
  await server.stop();
});

interface Study {
  banks: BankStore;
  records: StudyRecords;
  input: BankVersion;
}

/** A fresh study: its bank's first version is the Phase 1 output. */
async function study(bankId = 'study1'): Promise<Study> {
  const nc = await connect({ servers: server.url });
  connections.push(nc);
  const banks = await BankStore.open(nc, { cluster: randomClusterName() });
  const v1 = await banks.commit({
    bankId,
    parent: null,
    bank: MemoryBank.create({ 'README.md': 'phase 1 bank\n' }),
    author: 'test',
  });
  return {
    banks,
    records: new StudyRecords(banks.kv, bankId),
    input: { version: v1.version, commitHash: v1.commitHash, treeHash: v1.treeHash },
  };
}

/** A development target that learns one lesson named after the task. */
function learns(
  calls: string[],
  override: Partial<Phase2Outcome> = {},
): (task: { id: string }, bank: MemoryBank) => Promise<Phase2Outcome> {
  return async (task, bank) => {
    calls.push(`${task.id}@${bank.treeHash.slice(0, 8)}`);
    const r = applyBankChanges(bank, [
      { op: 'add', path: `lessons/${task.id}.md`, content: `learned on ${task.id}\n` },
    ]);
    if (!r.ok) throw new Error(r.rejection.reason);
    return {
      status: 'passed',
      verdict: 'PASS',
      bank: r.bank,
      attempts: 1,
      projects: 0,
      refusedPublications: 0,
      ...override,
    };
  };
}

const dev = [{ id: 'd1' }, { id: 'd2' }, { id: 'd3' }];

test('Phase 2 runs the tasks serially, each output the next input, and freezes the last', async () => {
  const s = await study();
  const calls: string[] = [];
  const r = await runPhase2({ ...s, tasks: dev, runTask: learns(calls) });
  expect(r.tasks.map((t) => [t.taskId, t.position, t.bankIn.version, t.bankOut.version])).toEqual([
    ['d1', 1, 1, 2],
    ['d2', 2, 2, 3],
    ['d3', 3, 3, 4],
  ]);
  // Each task saw the previous task's output.
  expect(calls.map((c) => c.split('@')[1])).toEqual(
    [s.input, ...r.tasks.slice(0, 2).map((t) => t.bankOut)].map((v) => v.treeHash.slice(0, 8)),
  );
  const frozen = await s.banks.load('study1', { version: r.frozen.version });
  expect(frozen.bank.paths).toEqual([
    'README.md',
    'lessons/d1.md',
    'lessons/d2.md',
    'lessons/d3.md',
  ]);
  expect(r.frozen).toMatchObject({ bankId: 'study1', devTaskIds: ['d1', 'd2', 'd3'] });
  expect(await s.records.get('phase2', 'frozen')).toEqual(r.frozen);
});

test('a rerun after a crash reuses accepted tasks and runs only the rest', async () => {
  const s = await study();
  const calls: string[] = [];
  const crashOn = (id: string) => {
    const run = learns(calls);
    return async (task: { id: string }, bank: MemoryBank) => {
      if (task.id === id) throw new Error('node agent killed');
      return run(task, bank);
    };
  };
  await expect(runPhase2({ ...s, tasks: dev, runTask: crashOn('d2') })).rejects.toThrow(
    'node agent killed',
  );
  expect(calls.map((c) => c.split('@')[0])).toEqual(['d1']);
  const events: [string, boolean][] = [];
  const r = await runPhase2({
    ...s,
    tasks: dev,
    runTask: learns(calls),
    onTask: (e) => events.push([e.task, e.reused]),
  });
  expect(events).toEqual([
    ['d1', true],
    ['d2', false],
    ['d3', false],
  ]);
  expect(calls.map((c) => c.split('@')[0])).toEqual(['d1', 'd2', 'd3']);
  expect(r.frozen.version).toBe(4);
});

test('an output committed just before a crash is adopted, not run again', async () => {
  const s = await study();
  const calls: string[] = [];
  await runPhase2({ ...s, tasks: dev.slice(0, 1), runTask: learns(calls) });
  // Simulate a crash between d1's bank commit and its record: delete the record (and the
  // frozen record of the one-task run) so only the commit, carrying the record, is left.
  await s.banks.kv.delete(s.records.key('phase2', 'd1'));
  await s.banks.kv.delete(s.records.key('phase2', 'frozen'));
  const events: [string, boolean][] = [];
  const r = await runPhase2({
    ...s,
    tasks: dev,
    runTask: learns(calls),
    onTask: (e) => events.push([e.task, e.reused]),
  });
  expect(events[0]).toEqual(['d1', true]);
  expect(calls.map((c) => c.split('@')[0])).toEqual(['d1', 'd2', 'd3']);
  expect(r.tasks[0]).toMatchObject({ taskId: 'd1', status: 'passed', bankOut: { version: 2 } });
});

test('a target that is not transition-ready stops Phase 2, naming status and verdict', async () => {
  const s = await study();
  const calls: string[] = [];
  const run = learns(calls);
  const err = await runPhase2({
    ...s,
    tasks: dev,
    runTask: async (task, bank) =>
      task.id === 'd2'
        ? { ...(await run(task, bank)), status: 'unverified', verdict: 'UNVERIFIED' }
        : run(task, bank),
  }).catch((e: unknown) => e);
  expect(String(err)).toContain(
    'Phase-2 target d2 is not transition-ready: unverified, UNVERIFIED',
  );
  expect(hasReason(err, ErrorReason.PROTOCOL)).toBe(true);
  expect(calls.map((c) => c.split('@')[0])).toEqual(['d1', 'd2']);
  expect(await s.records.get('phase2', 'd2')).toBeUndefined();
  expect(await s.records.get('phase2', 'frozen')).toBeUndefined();
});

test('a final FAIL after a stall is a completed boundary; a conflicting frozen output is refused', async () => {
  const s = await study();
  const r = await runPhase2({
    ...s,
    tasks: dev.slice(0, 1),
    runTask: learns([], { status: 'final_attempt', verdict: 'FAIL', stalled: 'no more ideas' }),
  });
  expect(r.tasks[0]).toMatchObject({
    status: 'final_attempt',
    verdict: 'FAIL',
    stalled: 'no more ideas',
  });
  // Another task list would freeze another bank: refused, the first frozen record stays.
  const err = await runPhase2({ ...s, tasks: dev, runTask: learns([]) }).catch((e: unknown) => e);
  expect(hasErrorCode(err, 'ALREADY_EXISTS')).toBe(true);
  expect(String(err)).toContain('already froze a different output');
  expect(await s.records.get('phase2', 'frozen')).toEqual(r.frozen);
});

test('Phase 3 scores held-out tasks on the frozen bank; infrastructure failures are unscored', async () => {
  const s = await study();
  await runPhase2({ ...s, tasks: dev, runTask: learns([]) });
  const seen: string[] = [];
  const r = await runPhase3({
    ...s,
    tasks: [{ id: 'h1' }, { id: 'h2' }, { id: 'h3' }],
    evaluate: async (task, bank) => {
      seen.push(`${task.id}:${bank.fileCount}`);
      if (task.id === 'h3') throw new Error('sandbox host lost');
      return { status: 'scored', score: task.id === 'h1' ? 1 : 0 };
    },
  });
  expect(seen).toEqual(['h1:4', 'h2:4', 'h3:4']);
  expect(r).toMatchObject({ scored: 2, unscored: 1, meanScore: 0.5 });
  expect(r.tasks[2]).toMatchObject({
    taskId: 'h3',
    status: 'unscored',
    reason: 'sandbox host lost',
  });
  expect(await s.records.get('phase3', 'result')).toEqual(r);

  // A rerun evaluates nothing again.
  const again = await runPhase3({
    ...s,
    tasks: [{ id: 'h1' }, { id: 'h2' }, { id: 'h3' }],
    evaluate: () => Promise.reject(new Error('must not run')),
  });
  expect(again.meanScore).toBe(0.5);
});

test('Phase 3 retries a retryable infrastructure failure, then leaves the task unscored', async () => {
  const s = await study();
  await runPhase2({ ...s, tasks: dev, runTask: learns([]) });
  const lost = () =>
    new TroupeError(ErrorCode.UNAVAILABLE, 'sandbox host lost', { retryable: true });
  const seen: string[] = [];
  const h2At: number[] = [];
  const r = await runPhase3({
    ...s,
    tasks: [{ id: 'h1' }, { id: 'h2' }, { id: 'h3' }],
    evaluationAttempts: 3,
    evaluationBackoffMs: 40,
    evaluate: async (task, _bank, _signal, attempt) => {
      seen.push(`${task.id}#${attempt}`);
      if (task.id === 'h2') h2At.push(performance.now());
      // h1's first machine is lost, its second scores; h2's is lost every time; h3 is refused
      // for good (not retryable): one attempt.
      if (task.id === 'h1' && attempt === 1) throw lost();
      if (task.id === 'h2') throw lost();
      if (task.id === 'h3') {
        throw new TroupeError(ErrorCode.INVALID_ARGUMENT, 'bad evaluator', { retryable: false });
      }
      return { status: 'scored', score: 1 };
    },
  });
  expect(seen).toEqual(['h1#1', 'h1#2', 'h2#1', 'h2#2', 'h2#3', 'h3#1']);
  expect(r.tasks.map((t) => [t.taskId, t.status, t.attempts])).toEqual([
    ['h1', 'scored', 2],
    ['h2', 'unscored', 3],
    ['h3', 'unscored', 1],
  ]);
  expect(r).toMatchObject({ scored: 1, unscored: 2, meanScore: 1 });
  expect(r.tasks[1]).toMatchObject({ reason: 'sandbox host lost' });
  // The waits between attempts double: 40 ms, then 80 ms.
  expect(h2At[1]! - h2At[0]!).toBeGreaterThanOrEqual(39);
  expect(h2At[2]! - h2At[1]!).toBeGreaterThanOrEqual(79);

  // evaluationAttempts bounds the retries.
  const s2 = await study('study-one-attempt');
  await runPhase2({ ...s2, tasks: dev, runTask: learns([]) });
  const once: number[] = [];
  const r2 = await runPhase3({
    ...s2,
    tasks: [{ id: 'h1' }],
    evaluationAttempts: 1,
    evaluate: async (_task, _bank, _signal, attempt) => {
      once.push(attempt);
      throw lost();
    },
  });
  expect([once, r2.unscored]).toEqual([[1], 1]);
});

test('Phase 3 refuses held-out tasks that overlap the development tasks, naming the field', async () => {
  const s = await study();
  await runPhase2({ ...s, tasks: dev, runTask: learns([]) });
  const err = await runPhase3({
    ...s,
    tasks: [{ id: 'h1' }, { id: 'd2' }],
    tasksField: 'spec.config.phase3.tasks',
    evaluate: () => Promise.reject(new Error('must not run')),
  }).catch((e: unknown) => e);
  expect(hasErrorCode(err, 'INVALID_ARGUMENT')).toBe(true);
  expect(String(err)).toContain('spec.config.phase3.tasks');
  expect(String(err)).toContain('both have d2');
});

test('Phase 3 detects a frozen bank mutated behind its back', async () => {
  const s = await study();
  const p2 = await runPhase2({ ...s, tasks: dev, runTask: learns([]) });
  const err = await runPhase3({
    ...s,
    tasks: [{ id: 'h1' }],
    evaluate: async () => {
      // Something rewrites the frozen version's record while the task runs.
      const key = commitKey('study1', p2.frozen.version);
      const entry = await s.banks.kv.get(key);
      const record = JSON.parse(entry!.string()) as { message: string };
      record.message = 'rewritten';
      await s.banks.kv.put(key, JSON.stringify(record));
      return { status: 'scored', score: 1 };
    },
  }).catch((e: unknown) => e);
  expect(String(err)).toContain('Phase-3 evaluation mutated frozen host memory');
  expect(hasReason(err, ErrorReason.INTEGRITY)).toBe(true);
  expect(await s.records.get('phase3', 'result')).toBeUndefined();
});

/** A practice branch that adds (or, with `edit`, rewrites) one lesson file. */
function branch(path: string, text: string): (snapshot: MemoryBank) => MemoryBank {
  return (snapshot) => {
    const r = applyBankChanges(snapshot, [
      { op: snapshot.has(path) ? 'modify' : 'add', path, content: text },
    ]);
    if (!r.ok) throw new Error(r.rejection.reason);
    return r.bank;
  };
}

test('Phase 1 commits each wave in Curriculum order; a clashing branch is refused', async () => {
  const s = await study();
  const waves = [
    [branch('lessons/a.md', 'a\n'), branch('lessons/shared.md', 'from b\n')],
    [branch('lessons/shared.md', 'from c\n'), branch('lessons/shared.md', 'from d\n')],
  ];
  const started: number[] = [];
  const r = await runPhase1<(b: MemoryBank) => MemoryBank>({
    ...s,
    proposeWave: async ({ wave, history }) => {
      expect(history).toHaveLength(wave - 1);
      return wave <= waves.length
        ? { kind: 'wave', projects: waves[wave - 1]! }
        : { kind: 'READY' };
    },
    practise: async (project, snapshot) => {
      started.push(snapshot.fileCount);
      return { status: 'practised', verdict: 'PASS', bank: project(snapshot) };
    },
    projectName: () => 'p',
  });
  expect(r).toMatchObject({ ended: 'READY', waves: 2, output: { version: 3 } });
  // Both branches of a wave start from the same snapshot.
  expect(started).toEqual([1, 1, 3, 3]);
  const w2 = await s.records.get<WaveRecord>('phase1', 'wave-2');
  expect(w2?.branches.map((b) => [b.index, b.committed, b.refused ?? ''])).toEqual([
    [1, true, ''],
    [2, false, 'changes lessons/shared.md, which an earlier branch of the wave changed'],
  ]);
  const out = await s.banks.load('study1', { version: 3 });
  expect(out.bank.readText('lessons/shared.md')).toBe('from c\n');
  // Done: a rerun returns the recorded result without asking the Curriculum again.
  const again = await runPhase1({
    ...s,
    proposeWave: () => Promise.reject(new Error('must not run')),
    practise: () => Promise.reject(new Error('must not run')),
    projectName: () => 'p',
  });
  expect(again).toEqual(r);
});

test('a quarantined branch blocks its wave: nothing of it is committed', async () => {
  const s = await study();
  let calls = 0;
  const err = await runPhase1<string>({
    ...s,
    proposeWave: async () => ({ kind: 'wave', projects: ['good', 'flaky'] }),
    practise: async (project, snapshot) => {
      calls++;
      return project === 'flaky'
        ? { status: 'quarantined', reason: 'UNVERIFIED: done + EVOLVE' }
        : { status: 'practised', verdict: 'PASS', bank: branch('lessons/x.md', 'x\n')(snapshot) };
    },
    projectName: (p) => p,
  }).catch((e: unknown) => e);
  expect(calls).toBe(2);
  expect(String(err)).toContain('Phase 1 wave 1 is blocked: branch 2 (flaky) was quarantined');
  expect(hasReason(err, ErrorReason.PROTOCOL)).toBe(true);
  expect(await s.banks.head('study1')).toMatchObject({ version: 1 });
  expect(await s.records.get('phase1', 'wave-1')).toBeUndefined();
});

test('a wave committed just before a crash is adopted on the rerun', async () => {
  const s = await study();
  const opts = {
    ...s,
    proposeWave: async ({ wave }: { wave: number }) =>
      wave === 1 ? { kind: 'wave' as const, projects: ['p1'] } : { kind: 'READY' as const },
    practise: async (_p: string, snapshot: MemoryBank) => ({
      status: 'practised' as const,
      verdict: 'PASS' as const,
      bank: branch('lessons/p1.md', 'p1\n')(snapshot),
    }),
    projectName: (p: string) => p,
  };
  await runPhase1(opts);
  await s.banks.kv.delete(s.records.key('phase1', 'wave-1'));
  await s.banks.kv.delete(s.records.key('phase1', 'ready'));
  const reused: boolean[] = [];
  const r = await runPhase1({
    ...opts,
    practise: () => Promise.reject(new Error('must not practise again')),
    onWave: (_w, wasReused) => reused.push(wasReused),
  });
  expect(reused).toEqual([true]);
  expect(r).toMatchObject({ ended: 'READY', output: { version: 2 } });
});
