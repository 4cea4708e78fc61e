import { noopLogger } from '@troupe/actors';
import { waitFor } from '@troupe/testkit';
import { createOperators } from '../../src/create-operators';
import { type Evaluate } from '../../src/evaluation-request';
import { type EvaluatorResult } from '../../src/evaluator-result';
import { type EvolveOptions } from '../../src/evolve-config';
import { runIslandStep } from '../../src/island-worker';
import { type JournalRecord, type NodeRecord } from '../../src/journal-record';
import { InMemoryJournalStore } from '../../src/journal-store';
import { replayJournal } from '../../src/replay-journal';
import { SearchRunner } from '../../src/search-runner';
import { budgetUsage } from '../../src/search-state';
import { parseTunableParams } from '../../src/tunable-params';

// The toy task of the search-runner tests: maximise -(x-1)^2 - (y+2)^2.
const SEED = {
  language: 'python',
  source: ['X = 0.0  # troupe:param float[-5,5]', 'Y = 0.0  # troupe:param float[-5,5]', ''].join(
    '\n',
  ),
};

function scoreOf(source: string): number {
  const v = Object.fromEntries(parseTunableParams(source).map((p) => [p.name, p.value]));
  return -(((v.X ?? 0) - 1) ** 2) - ((v.Y ?? 0) + 2) ** 2;
}

function ok(score: number): EvaluatorResult {
  return {
    status: 'ok',
    score,
    signature: [],
    metrics: {},
    stderrTail: '',
    evalMs: 1,
    evaluatorVersion: 'toy/1',
  };
}

const ASYNC: EvolveOptions = {
  direction: 'maximise',
  seed: 3,
  schedule: 'async',
  islands: 2,
  islandConcurrency: 1,
  maxIslandSize: 4,
  draftsPerIsland: 1,
  childrenPerGeneration: 3,
  migrationInterval: 2,
  crossoverAfterGeneration: 1,
  testPhase: false,
  limits: { maxEvaluations: 14, maxGenerations: 100 },
};

/** An evaluator whose validation evaluations finish only when the test releases them. */
class GatedEvaluator {
  readonly pending: { attemptId: string; release: () => void }[] = [];
  readonly started: string[] = [];
  readonly evaluate: Evaluate = async (req, ctx) => {
    if (req.phase === 'test') return ok(scoreOf(req.program.source));
    this.started.push(req.attemptId);
    await new Promise<void>((resolve, reject) => {
      this.pending.push({ attemptId: req.attemptId, release: resolve });
      ctx?.signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
    });
    return ok(scoreOf(req.program.source));
  };

  /** Finishes the newest evaluation in flight (the older ones play slow evaluations). */
  releaseNewest(): void {
    this.pending.pop()?.release();
  }
}

function runnerOf(journal: InMemoryJournalStore, evaluate: Evaluate, options = ASYNC) {
  return new SearchRunner(
    { taskId: 'toy', options, seeds: [SEED] },
    {
      journal,
      evaluate,
      stepIsland: (_lane, step, signal) =>
        runIslandStep(
          step,
          { evaluate, operators: createOperators(step.config), journal, logger: noopLogger },
          signal,
        ),
    },
  );
}

const nodesOf = (records: JournalRecord[]) =>
  records.filter((r): r is NodeRecord => r.type === 'node');

jest.setTimeout(60_000);

describe('SearchRunner, async (steady-state) schedule', () => {
  it('refills a freed slot at once while older evaluations still run', async () => {
    const journal = new InMemoryJournalStore();
    const gate = new GatedEvaluator();
    const runner = runnerOf(journal, gate.evaluate);
    const done = runner.run(new AbortController().signal);
    // Two lanes (2 islands x 1). Finish only the newest evaluation each time: the oldest one
    // never finishes until the budget is spent, like a slow evaluation. After each release a new
    // evaluation must start while the old one is still running.
    const refills: number[] = [];
    for (let started = 2; started <= 14; started++) {
      await waitFor(() => gate.started.length >= started && gate.pending.length === 2, {
        timeoutMs: 20_000,
        message: `evaluation ${started} started with both lanes busy`,
      });
      refills.push(gate.pending.length);
      if (started < 14) gate.releaseNewest();
    }
    expect(refills.every((n) => n === 2)).toBe(true);
    const oldest = gate.pending[0]?.attemptId;
    expect(oldest).toBe(gate.started[0]);
    while (gate.pending.length > 0) gate.releaseNewest();
    const final = await done;
    expect(final.usage.evaluations).toBe(14);
    const records = (await journal.read('toy')).records;
    // Generation records close each batch of finished children; admissions listed there were
    // made as the children arrived, and replaying the journal gives the live islands.
    expect(records.filter((r) => r.type === 'generation').length).toBeGreaterThanOrEqual(3);
    expect(records.filter((r) => r.type === 'plan').length).toBe(14);
    const replayed = replayJournal(records);
    expect(replayed.islands).toEqual(runner.current?.islands);
    expect(budgetUsage(replayed)).toEqual(budgetUsage(runner.current!));
    const ids = nodesOf(records).map((n) => n.attemptId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('resumes from its journal after a crash, evaluating no attempt twice', async () => {
    const journal = new InMemoryJournalStore();
    const gate = new GatedEvaluator();
    const crashed = new AbortController();
    const first = runnerOf(journal, gate.evaluate).run(crashed.signal);
    for (let i = 0; i < 5; i++) {
      await waitFor(() => gate.pending.length === 2, { timeoutMs: 20_000 });
      gate.releaseNewest();
    }
    await waitFor(() => gate.pending.length === 2, { timeoutMs: 20_000 });
    crashed.abort(); // the process dies with two evaluations in flight
    await expect(first).rejects.toBeDefined();
    const evaluated = new Set<string>(gate.started);
    const again: string[] = [];
    const second = runnerOf(journal, async (req) => {
      if (req.phase === 'validation') again.push(req.attemptId);
      return ok(scoreOf(req.program.source));
    });
    const final = await second.run(new AbortController().signal);
    expect(again.filter((id) => evaluated.has(id))).toEqual([]);
    const records = (await journal.read('toy')).records;
    // The two lost attempts count against the budget; their slots ran again with a new try.
    expect(final.usage.evaluations).toBe(14);
    expect(final.usage.lostAttempts).toBe(2);
    const retried = nodesOf(records).filter((n) => n.try === 1);
    expect(retried.length).toBe(2);
    expect(replayJournal(records).islands).toEqual(second.current?.islands);
  });

  it.each([
    ['async, one lane', { ...ASYNC, islandConcurrency: 1, islands: 1 }],
    ['generational', { ...ASYNC, schedule: 'generational' as const }],
  ])('is reproducible from its seed across search ids (%s)', async (_name, options) => {
    const run = async (taskId: string, seed = 3) => {
      const journal = new InMemoryJournalStore();
      const evaluate: Evaluate = async (req) => ok(scoreOf(req.program.source));
      const runner = new SearchRunner(
        { taskId, options: { ...options, seed }, seeds: [SEED] },
        {
          journal,
          evaluate,
          stepIsland: (_lane, step, signal) =>
            runIslandStep(
              step,
              { evaluate, operators: createOperators(step.config), journal, logger: noopLogger },
              signal,
            ),
        },
      );
      await runner.run(new AbortController().signal);
      return nodesOf((await journal.read(taskId)).records).map((n) => n.codeHash);
    };
    // The search id (which holds the job id) is no part of any random key: with one lane, or
    // generations, the whole search is a function of the seed; another seed searches elsewhere.
    const a = await run('job-a-or3');
    expect(await run('job-b-or3')).toEqual(a);
    expect(await run('job-c-or3', 4)).not.toEqual(a);
  });
});
