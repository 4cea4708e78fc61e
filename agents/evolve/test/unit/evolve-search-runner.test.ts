import { noopLogger } from '@troupe/actors';
import { createOperators } from '../../src/create-operators';
import { type Evaluate, type EvaluationRequest } from '../../src/evaluation-request';
import { type EvaluatorResult } from '../../src/evaluator-result';
import { type EvolveOptions } from '../../src/evolve-config';
import { runIslandStep } from '../../src/island-worker';
import { type FinalRecord, type JournalRecord, type NodeRecord } from '../../src/journal-record';
import { InMemoryJournalStore } from '../../src/journal-store';
import { type ChatFunction } from '../../src/llm-operator';
import { replayJournal } from '../../src/replay-journal';
import { SearchRunner } from '../../src/search-runner';
import {
  budgetUsage,
  nodesInOrder,
  planGeneration,
  type SearchState,
} from '../../src/search-state';
import { improveStepScale } from '../../src/step-adaptation';
import { parseTunableParams } from '../../src/tunable-params';

// A toy task: maximise -(x-1)^2 - (y+2)^2; the "raw output" is the parameter values, which the
// evaluator reads itself. A program containing BUG fails like a crashing program.
const SEED = {
  language: 'python',
  source: [
    'X = 0.0  # troupe:param float[-5,5]',
    'Y = 0.0  # troupe:param float[-5,5]',
    'print(X, Y)',
    '',
  ].join('\n'),
};

function result(status: EvaluatorResult['status'], score: number | null): EvaluatorResult {
  return {
    status,
    score,
    signature: [],
    metrics: {},
    stderrTail: '',
    evalMs: 5,
    evaluatorVersion: 'toy/1',
  };
}

function toyScore(source: string): number {
  const v = Object.fromEntries(parseTunableParams(source).map((p) => [p.name, p.value]));
  return -(((v.X ?? 0) - 1) ** 2) - ((v.Y ?? 0) + 2) ** 2;
}

const toyEvaluate: Evaluate = async (req) => {
  if (req.program.source.includes('BUG')) return result('error', null);
  if (req.phase === 'test') return result('ok', toyScore(req.program.source) - 0.01);
  return result('ok', toyScore(req.program.source));
};

const BASE: EvolveOptions = {
  direction: 'maximise',
  seed: 11,
  islands: 2,
  maxIslandSize: 4,
  draftsPerIsland: 2,
  childrenPerGeneration: 3,
  migrationInterval: 2,
  crossoverAfterGeneration: 1,
  crossoverProbability: 0.4,
  limits: { maxGenerations: 8, maxEvaluations: 500 },
};

interface Run {
  final: FinalRecord;
  state: SearchState;
  records: JournalRecord[];
}

async function runSearch(
  journal: InMemoryJournalStore,
  options: EvolveOptions = BASE,
  deps: {
    evaluate?: Evaluate;
    chat?: ChatFunction;
    now?: () => number;
    stopRequested?: () => boolean;
    seeds?: (typeof SEED)[];
  } = {},
): Promise<Run> {
  const evaluate = deps.evaluate ?? toyEvaluate;
  const runner = new SearchRunner(
    { taskId: 'toy', options, seeds: deps.seeds ?? [SEED] },
    {
      journal,
      evaluate,
      ...(deps.now ? { now: deps.now } : {}),
      ...(deps.stopRequested ? { stopRequested: deps.stopRequested } : {}),
      stepIsland: (_island, step, signal) =>
        runIslandStep(
          step,
          {
            evaluate,
            operators: createOperators(step.config, deps.chat ? { chat: deps.chat } : {}),
            journal,
            ...(deps.now ? { now: deps.now } : {}),
            logger: noopLogger,
          },
          signal,
        ),
    },
  );
  const final = await runner.run(new AbortController().signal);
  const records = (await journal.read('toy')).records;
  return { final, state: runner.current!, records };
}

const nodesOf = (records: JournalRecord[]) =>
  records.filter((r): r is NodeRecord => r.type === 'node');
const fingerprint = (records: JournalRecord[]) =>
  nodesOf(records)
    .map((n) => `${n.generation}/${n.slot}/${n.depth} ${n.operator} ${n.codeHash} ${n.outcome}`)
    .sort();
const islandsByCode = (s: SearchState) =>
  s.islands.map((members) => members.map((m) => `${m.codeHash}:${m.fitness}:${m.migrant}`).sort());

describe('SearchRunner with built-in operators', () => {
  let run: Run;
  beforeAll(async () => {
    run = await runSearch(new InMemoryJournalStore());
  });

  it('runs to completion, improves on the seed and selects the best validated node', () => {
    const { final, records } = run;
    expect(final.status).toBe('succeeded');
    expect(final.stopReason).toBe('generations');
    expect(final.selection.source).toBe('best_validation');
    const scores = nodesOf(records).map((n) => n.result?.score ?? Number.NEGATIVE_INFINITY);
    expect(final.selection.score).toBe(Math.max(...scores));
    expect(final.selection.score!).toBeGreaterThan(toyScore(SEED.source));
    expect(final.test?.result?.status).toBe('ok');
    expect(records.filter((r) => r.type === 'generation')).toHaveLength(8);
    const ops = new Set(nodesOf(records).map((n) => n.operator));
    expect([...ops].sort()).toEqual(['crossover', 'draft', 'improve', 'seed']);
  });

  it('journals every attempt once, each with a start record before its node', () => {
    const nodes = nodesOf(run.records);
    const ids = nodes.map((n) => n.attemptId);
    expect(new Set(ids).size).toBe(ids.length);
    const starts = run.records.filter((r) => r.type === 'attempt').map((r) => r.attemptId);
    expect(new Set(starts)).toEqual(new Set(ids));
    for (const id of ids) {
      const startAt = run.records.findIndex((r) => r.type === 'attempt' && r.attemptId === id);
      const nodeAt = run.records.findIndex((r) => r.type === 'node' && r.attemptId === id);
      expect(startAt).toBeLessThan(nodeAt);
    }
  });

  it('replaying the journal gives exactly the live state', () => {
    const replayed = replayJournal(run.records);
    expect(replayed).toEqual(run.state);
    // The generation records' admissions are what the pure close recomputes on replay.
    const journaled = run.records.filter((r) => r.type === 'generation');
    expect(replayed.history).toEqual(journaled);
    expect(budgetUsage(replayed)).toEqual(run.final.usage);
  });

  it('respects island size, admission and migration invariants', () => {
    const s = run.state;
    for (const members of s.islands) {
      expect(members.length).toBeLessThanOrEqual(4);
      expect(new Set(members.map((m) => m.codeHash)).size).toBe(members.length);
    }
    const migrations = s.history.flatMap((h) => h.migrations);
    expect(migrations.length).toBeGreaterThan(0);
    // Every migration round happens at generations 1, 3, 5, 7 (interval 2).
    expect(s.history.filter((h) => h.migrations.length > 0).map((h) => h.generation)).toEqual(
      expect.arrayContaining([1]),
    );
    for (const h of s.history) if (h.migrations.length > 0) expect((h.generation + 1) % 2).toBe(0);
    const migrated = migrations.map((mv) => mv.nodeId);
    expect(new Set(migrated).size).toBe(migrated.length);
  });

  it('is deterministic for a seed and differs for another seed', async () => {
    const again = await runSearch(new InMemoryJournalStore());
    expect(fingerprint(again.records)).toEqual(fingerprint(run.records));
    expect(islandsByCode(again.state)).toEqual(islandsByCode(run.state));
    const other = await runSearch(new InMemoryJournalStore(), { ...BASE, seed: 12 });
    expect(fingerprint(other.records)).not.toEqual(fingerprint(run.records));
  });

  it.each([2, 9, 23, 40, 61])(
    'resumes after a crash that kept %i records and ends like the uninterrupted run',
    async (keep) => {
      const journal = new InMemoryJournalStore();
      await runSearch(journal);
      journal.truncate('toy', keep);
      const resumed = await runSearch(journal);
      const ids = nodesOf(resumed.records).map((n) => n.attemptId);
      expect(new Set(ids).size).toBe(ids.length);
      expect(islandsByCode(resumed.state)).toEqual(islandsByCode(run.state));
      const best = (r: Run) => r.state.nodes[r.final.selection.nodeId!]!.codeHash;
      expect(best(resumed)).toBe(best(run));
      expect(resumed.state.generation).toBe(run.state.generation);
      expect(replayJournal(resumed.records)).toEqual(resumed.state);
    },
  );

  it('gives a lost attempt a new try and counts it against the budget', async () => {
    const journal = new InMemoryJournalStore();
    await runSearch(journal);
    const all = (await journal.read('toy')).records;
    // Keep everything up to an attempt start whose node was journaled later: that attempt is lost.
    const cut = all.findIndex((r, i) => r.type === 'attempt' && i > 20) + 1;
    const lost = all[cut - 1]!;
    const prefix = all.slice(0, cut);
    const lostCount = prefix.filter(
      (r) =>
        r.type === 'attempt' &&
        !prefix.some((n) => n.type === 'node' && n.attemptId === r.attemptId),
    ).length;
    journal.truncate('toy', cut);
    const resumed = await runSearch(journal);
    const lostId = lost.type === 'attempt' ? lost.attemptId : '';
    expect(resumed.state.nodes[lostId]).toBeUndefined();
    expect(lostId.endsWith(':t0')).toBe(true);
    expect(resumed.state.nodes[lostId.replace(/:t0$/, ':t1')]).toBeDefined();
    expect(lostCount).toBeGreaterThanOrEqual(1);
    expect(resumed.final.usage.lostAttempts).toBe(lostCount);
    expect(resumed.final.usage.evaluations).toBe(run.final.usage.evaluations + lostCount);
  });
});

describe('SearchRunner budgets and stops', () => {
  it('stops at the evaluation limit, never above it, and still selects and grades', async () => {
    const { final, records } = await runSearch(new InMemoryJournalStore(), {
      ...BASE,
      limits: { maxEvaluations: 7, maxGenerations: 50 },
    });
    expect(final.stopReason).toBe('evaluations');
    expect(final.usage.evaluations).toBe(7);
    expect(nodesOf(records)).toHaveLength(7);
    expect(final.selection.source).toBe('best_validation');
    expect(final.status).toBe('succeeded');
    expect(records.filter((r) => r.type === 'stop')).toHaveLength(1);
    expect(records[records.length - 1]?.type).toBe('final');
  });

  it('stops on request and proceeds to final selection', async () => {
    let polls = 0;
    const { final } = await runSearch(new InMemoryJournalStore(), BASE, {
      stopRequested: () => ++polls >= 3,
    });
    expect(final.stopReason).toBe('requested');
    expect(final.usage.generations).toBeLessThan(8);
    expect(final.selection.source).toBe('best_validation');
  });

  it('charges operator and evaluation time but not the wait for an evaluator', async () => {
    let clock = 1_000_000;
    const now = () => clock;
    const evaluate: Evaluate = async (req, { onStart }) => {
      clock += 300; // waiting for a free evaluator
      onStart?.();
      clock += 20; // evaluating
      return toyEvaluate(req, { signal: new AbortController().signal });
    };
    const { final } = await runSearch(
      new InMemoryJournalStore(),
      // One island working on one child at a time, so the fake clock is not shared.
      { ...BASE, islands: 1, islandConcurrency: 1, limits: { maxGenerations: 3 } },
      { evaluate, now },
    );
    const evaluations = final.usage.evaluations;
    expect(final.usage.queueMs).toBe(300 * evaluations);
    expect(final.usage.chargedMs).toBe(20 * evaluations);
  });

  it('stops on charged search time, not on time spent queued', async () => {
    let clock = 0;
    const evaluate: Evaluate = async (req, { onStart }) => {
      clock += 10_000;
      onStart?.();
      clock += 100;
      return toyEvaluate(req, { signal: new AbortController().signal });
    };
    const { final } = await runSearch(
      new InMemoryJournalStore(),
      {
        ...BASE,
        islands: 1,
        islandConcurrency: 1,
        limits: { maxWallMs: 1_000, maxGenerations: 100 },
      },
      { evaluate, now: () => clock },
    );
    expect(final.stopReason).toBe('wall_time');
    // 100 ms charged per evaluation: stops at the round that crosses 1 s, having queued 100 s.
    expect(final.usage.chargedMs).toBeGreaterThanOrEqual(1_000);
    expect(final.usage.chargedMs).toBeLessThan(1_000 + 100 * 3);
    expect(final.usage.queueMs).toBe(100 * final.usage.chargedMs);
  });
});

describe('SearchRunner evaluation failures', () => {
  it('retries an infrastructure failure once and never re-runs program failures', async () => {
    const calls = new Map<string, EvaluationRequest[]>();
    const evaluate: Evaluate = async (req, o) => {
      calls.set(req.attemptId, [...(calls.get(req.attemptId) ?? []), req]);
      if (req.attemptId.includes(':g1:s0:') && req.infraRetry === 0) throw new Error('docker gone');
      if (req.attemptId.includes(':g1:s1:')) throw new Error('evaluator broken');
      if (req.attemptId.includes(':g2:s0:')) return { ...result('timeout', null) };
      return toyEvaluate(req, o);
    };
    const { state } = await runSearch(
      new InMemoryJournalStore(),
      { ...BASE, limits: { maxGenerations: 3 } },
      { evaluate },
    );
    const at = (g: number, s: number) => state.nodes[`toy:g${g}:s${s}:d0:t0`]!;
    expect(at(1, 0)).toMatchObject({ outcome: 'scored', infraRetries: 1 });
    expect(calls.get('toy:g1:s0:d0:t0')?.map((r) => r.infraRetry)).toEqual([0, 1]);
    expect(at(1, 1)).toMatchObject({ outcome: 'unscored', result: null, infraRetries: 1 });
    expect(at(1, 1).error).toContain('evaluator broken');
    expect(calls.get('toy:g1:s1:d0:t0')).toHaveLength(2);
    expect(at(2, 0)).toMatchObject({ outcome: 'buggy' });
    expect(calls.get('toy:g2:s0:d0:t0')).toHaveLength(1);
    for (const reqs of calls.values()) expect(reqs.length).toBeLessThanOrEqual(2);
    const admitted = state.history.flatMap((h) => h.admissions.map((a) => a.nodeId));
    expect(admitted).not.toContain(at(1, 1).attemptId);
  });

  it('reports test_failed when the selected program fails its test grading', async () => {
    const evaluate: Evaluate = async (req, o) =>
      req.phase === 'test' ? result('invalid', null) : toyEvaluate(req, o);
    const { final } = await runSearch(
      new InMemoryJournalStore(),
      { ...BASE, limits: { maxGenerations: 2 } },
      { evaluate },
    );
    expect(final.selection.source).toBe('best_validation');
    expect(final.status).toBe('test_failed');
    expect(final.test?.attemptId).toBe('toy:final:test:t0');
  });
});

describe('SearchRunner with LLM operators (scripted chat)', () => {
  const BUGGY = '```python\nprint(BUG)\n```';
  const LLM: EvolveOptions = {
    ...BASE,
    operators: 'llm',
    includeSeeds: false,
    islands: 1,
    draftsPerIsland: 1,
    childrenPerGeneration: 1,
    debugMaxDepth: 2,
    limits: { maxGenerations: 2, maxEvaluations: 100 },
  };

  it('follows a buggy child with a Debug chain bounded by depth', async () => {
    const chats: string[] = [];
    const chat: ChatFunction = async (messages) => {
      chats.push(messages[1]?.content ?? '');
      return { text: BUGGY, costUsd: 0.002 };
    };
    const { final, state } = await runSearch(new InMemoryJournalStore(), LLM, { chat });
    const chain = Object.values(state.nodes).filter((n) => n.generation === 0);
    expect(chain.map((n) => [n.depth, n.operator, n.outcome])).toEqual([
      [0, 'draft', 'buggy'],
      [1, 'debug', 'buggy'],
      [2, 'debug', 'buggy'],
    ]);
    expect(chain[1]?.parentIds).toEqual([chain[0]?.attemptId]);
    expect(chats[1]).toContain('failed evaluation');
    // Nothing ever scored: a seeded random code-bearing node, flagged.
    expect(final.selection.source).toBe('random_no_valid');
    expect(final.status).toBe('no_valid_program');
    expect(final.usage.costUsd).toBeCloseTo(0.002 * chats.length, 9);
  });

  it('ends the chain when Debug fixes the program, and admits the fix', async () => {
    const replies = [
      BUGGY,
      '```python\nX = 1.0  # troupe:param float[-5,5]\nY = -2.0  # troupe:param float[-5,5]\n```',
    ];
    const chat: ChatFunction = async () =>
      replies.shift() ?? '```python\nX = 0.5  # troupe:param float[-5,5]\n```';
    const { state, final } = await runSearch(
      new InMemoryJournalStore(),
      { ...LLM, limits: { maxGenerations: 1 } },
      { chat },
    );
    const chain = Object.values(state.nodes).filter((n) => n.generation === 0);
    expect(chain.map((n) => n.outcome)).toEqual(['buggy', 'scored']);
    expect(state.islands[0]?.map((m) => m.nodeId)).toEqual([chain[1]?.attemptId]);
    expect(final.selection).toMatchObject({ source: 'best_validation', score: 0 });
  });

  it('stops the chain on the total-time bound', async () => {
    let clock = 0;
    const chat: ChatFunction = async () => {
      clock += 700;
      return BUGGY;
    };
    const { state } = await runSearch(
      new InMemoryJournalStore(),
      { ...LLM, debugMaxDepth: 5, debugMaxTimeMs: 1_000, limits: { maxGenerations: 1 } },
      { chat, now: () => clock },
    );
    // Depth 1 takes 700 ms (< 1000: go on), depth 2 brings the chain to 1400 ms: stop.
    expect(Object.values(state.nodes).map((n) => n.depth)).toEqual([0, 1, 2]);
  });

  it('reports no_program when no operator call produced code', async () => {
    const chat: ChatFunction = async () => 'no code today';
    const { final, state } = await runSearch(
      new InMemoryJournalStore(),
      { ...LLM, limits: { maxGenerations: 2 } },
      { chat },
    );
    expect(Object.values(state.nodes).every((n) => n.outcome === 'no_code')).toBe(true);
    expect(final).toMatchObject({
      status: 'no_program',
      selection: { source: 'none', nodeId: null },
    });
    expect(final.usage.evaluations).toBe(0);
  });
});

describe('SearchRunner input checks', () => {
  it('refuses built-in operators on seeds without markers and bad options', async () => {
    await expect(
      runSearch(new InMemoryJournalStore(), BASE, {
        seeds: [{ language: 'python', source: 'print(1)\n' }],
      }),
    ).rejects.toThrow('troupe:param');
    await expect(runSearch(new InMemoryJournalStore(), { ...BASE, islands: 0 })).rejects.toThrow(
      'evolve.islands',
    );
  });
});

describe('SearchRunner test grading after a crash', () => {
  it('gives the test grading a new attempt id when the first one was lost', async () => {
    const journal = new InMemoryJournalStore();
    await runSearch(journal, { ...BASE, limits: { maxGenerations: 2 } });
    const all = (await journal.read('toy')).records;
    journal.truncate('toy', all.findIndex((r) => r.type === 'test-start') + 1);
    const graded: string[] = [];
    const evaluate: Evaluate = async (req, o) => {
      if (req.phase === 'test') graded.push(req.attemptId);
      return toyEvaluate(req, o);
    };
    const { final } = await runSearch(
      journal,
      { ...BASE, limits: { maxGenerations: 2 } },
      { evaluate },
    );
    expect(graded).toEqual(['toy:final:test:t1']);
    expect(final.test?.attemptId).toBe('toy:final:test:t1');
    expect(final.status).toBe('succeeded');
  });
});

describe('SearchRunner with step-size adaptation and island resets', () => {
  const ADAPTIVE: EvolveOptions = {
    ...BASE,
    islands: 3,
    stepAdaptation: 'one-fifth',
    resetInterval: 3,
    limits: { maxGenerations: 12, maxEvaluations: 500 },
  };
  let run: Run;
  beforeAll(async () => {
    run = await runSearch(new InMemoryJournalStore(), ADAPTIVE);
  });

  it('plans Improve children with the step scale of their island, which moves', () => {
    const plans = planGeneration(run.state).filter((p) => p.operator === 'improve');
    expect(plans.length).toBeGreaterThan(0);
    const ordered = nodesInOrder(run.state);
    for (const p of plans) {
      expect(p.stepScale).toBe(improveStepScale(ordered, p.island, run.state.config.direction));
    }
    // Improvements get rarer near the optimum: every island's step has shrunk by the end.
    for (let island = 0; island < 3; island++) {
      expect(improveStepScale(ordered, island, 'maximise')).toBeLessThan(1);
    }
  });

  it('resets the worse islands every 3 generations, founded from a better one', () => {
    const resets = run.state.history.filter((h) => (h.resets ?? []).length > 0);
    expect(resets.map((h) => h.generation)).toEqual([2, 5, 8, 11]);
    for (const h of resets) {
      expect(h.resets).toHaveLength(1); // ⌊3/2⌋ islands
      const r = h.resets![0]!;
      expect(r.from).not.toBe(r.island);
      // The founder was its island's best member when the generation closed.
      const founder = run.state.nodes[r.nodeId]!;
      expect(founder.outcome).toBe('scored');
    }
  });

  it('replays and resumes exactly with both on', async () => {
    expect(replayJournal(run.records)).toEqual(run.state);
    const journal = new InMemoryJournalStore();
    await runSearch(journal, ADAPTIVE);
    journal.truncate('toy', 47);
    const resumed = await runSearch(journal, ADAPTIVE);
    expect(islandsByCode(resumed.state)).toEqual(islandsByCode(run.state));
    expect(fingerprint(resumed.records)).toEqual(fingerprint(run.records));
  });

  it('reaches the optimum more closely than the fixed step on the toy task', async () => {
    const errorOf = (r: Run) => -(r.final.selection.score ?? Number.NEGATIVE_INFINITY);
    let adaptive = 0;
    let fixed = 0;
    for (const seed of [1, 2, 3, 4]) {
      const base = { ...BASE, seed, limits: { maxGenerations: 20, maxEvaluations: 500 } };
      fixed += errorOf(await runSearch(new InMemoryJournalStore(), base));
      adaptive += errorOf(
        await runSearch(new InMemoryJournalStore(), { ...base, stepAdaptation: 'one-fifth' }),
      );
    }
    expect(adaptive).toBeLessThan(fixed);
  });
});
