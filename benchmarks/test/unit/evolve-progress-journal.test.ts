import { InMemoryJournalStore, type JournalRecord, type NodeRecord } from '@troupe/evolve';
import { fitnessSeries } from '../../src/evolve/fitness-series';
import { type GenerationProgress, ProgressJournal } from '../../src/evolve/progress-journal';

const SEED = 'X = 0.5  # troupe:param float[0,1]\nprint(X)\n';

const taskRecord: JournalRecord = {
  type: 'task',
  taskId: 't',
  config: { islands: 2, direction: 'maximise' } as never,
  seeds: [{ language: 'python', source: SEED }],
  createdAt: 0,
};

function scored(island: number, slot: number, score: number, generation = 0): NodeRecord {
  return {
    type: 'node',
    taskId: 't',
    generation,
    slot,
    depth: 0,
    try: 0,
    island,
    operator: generation === 0 ? 'draft' : 'improve',
    parentIds: [],
    program: { language: 'python', source: SEED.replace('0.5', String(score / 10)) },
    codeHash: `h${island}-${slot}-${generation}`,
    outcome: 'scored',
    result: {
      status: 'ok',
      score,
      signature: [],
      metrics: {},
      stderrTail: '',
      evalMs: 1,
      evaluatorVersion: 'toy/1',
    },
    error: null,
    costUsd: 0,
    infraRetries: 0,
    attemptId: `t:g${generation}:s${slot}:i${island}`,
    timings: { startedAt: 0, opMs: 0, queueMs: 0, evalMs: 1, totalMs: 1 },
  };
}

const generation = (g: number): JournalRecord => ({
  type: 'generation',
  taskId: 't',
  generation: g,
  admissions: [],
  evicted: [],
  migrations: [],
  chargedMs: 0,
  closedAt: 10 + g,
});

const RECORDS: JournalRecord[] = [
  taskRecord,
  scored(0, 0, 3),
  scored(1, 1, 5),
  scored(0, 2, 1),
  generation(0),
];

test('each closed generation reports the islands the journal artifacts chart', async () => {
  const seen: GenerationProgress[] = [];
  const journal = new ProgressJournal(new InMemoryJournalStore(), 'maximise', (p) => seen.push(p));
  for (const r of RECORDS) await journal.append(r);
  // A repeated append (a retry) reports nothing new.
  await journal.append(RECORDS[4]!);
  expect(seen).toHaveLength(1);
  const expected = fitnessSeries(RECORDS)!.generations[0]!;
  expect(seen[0]).toEqual({
    generation: 0,
    evaluations: 3,
    bestScore: 5,
    islands: expected.islands,
  });
  expect(seen[0]!.islands.some((i) => i.size > 0)).toBe(true);
});

test('a resumed search replays the journal first; a gap in what it saw loses only the islands', async () => {
  const store = new InMemoryJournalStore();
  for (const r of RECORDS.slice(0, 4)) await store.append(r);
  const seen: GenerationProgress[] = [];
  const resumed = new ProgressJournal(store, 'maximise', (p) => seen.push(p));
  await resumed.read('t', 0);
  await resumed.append(RECORDS[4]!);
  expect(seen[0]!.islands).toEqual(fitnessSeries(RECORDS)!.generations[0]!.islands);

  const partial: GenerationProgress[] = [];
  const late = new ProgressJournal(store, 'maximise', (p) => partial.push(p));
  await late.read('t', 2); // never saw the task record
  await late.append(generation(1));
  expect(partial).toHaveLength(1);
  expect(partial[0]!.islands).toEqual([]);
  expect(partial[0]!.generation).toBe(1);
});
