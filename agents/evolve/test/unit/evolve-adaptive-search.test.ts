import { type IslandMember } from '../../src/island';
import { resetIslands } from '../../src/island-reset';
import { type NodeRecord } from '../../src/journal-record';
import { SeededRng } from '../../src/seeded-rng';
import {
  banditStepScale,
  improveStepScale,
  STEP_ARMS,
  STEP_GROW,
  STEP_SCALE_MIN,
  STEP_SHRINK,
} from '../../src/step-adaptation';

let joined = 0;
const m = (nodeId: string, fitness: number): IslandMember => ({
  nodeId,
  fitness,
  codeHash: `h-${nodeId}`,
  migrant: false,
  joinedAt: joined++,
});
const ids = (island: readonly IslandMember[]) => island.map((x) => x.nodeId);

describe('resetIslands', () => {
  it('empties the worse half and founds each from the best of a better island', () => {
    const islands = [
      [m('a1', 1), m('a2', 2)],
      [m('b1', 9), m('b2', 3)],
      [m('c1', 5)],
      [m('d1', 4), m('d2', 0)],
    ];
    const out = resetIslands(islands, SeededRng.fromKey(7, 'reset'), 50);
    // Ranked by best: b (9), c (5), d (4), a (2): a and d are reset from b or c.
    expect(out.resets.map((r) => r.island)).toEqual([0, 3]);
    for (const r of out.resets) {
      expect([1, 2]).toContain(r.from);
      expect(r.nodeId).toBe(r.from === 1 ? 'b1' : 'c1');
      expect(ids(out.islands[r.island]!)).toEqual([r.nodeId]);
      expect(out.islands[r.island]![0]).toMatchObject({ migrant: true });
    }
    expect(out.islands[0]![0]!.joinedAt).toBe(50);
    expect(out.nextJoinedAt).toBe(52);
    expect(out.evicted).toEqual([
      { island: 0, nodeId: 'a1' },
      { island: 0, nodeId: 'a2' },
      { island: 3, nodeId: 'd1' },
      { island: 3, nodeId: 'd2' },
    ]);
    // The better half is untouched; the input is not modified.
    expect(ids(out.islands[1]!)).toEqual(['b1', 'b2']);
    expect(ids(islands[0]!)).toEqual(['a1', 'a2']);
  });

  it('ranks an empty island last, breaks ties by index, and leaves one island alone', () => {
    const out = resetIslands([[], [m('x', 1)], [m('y', 1)]], SeededRng.fromKey(1), 0);
    expect(out.resets).toEqual([
      { island: 0, from: expect.any(Number), nodeId: expect.any(String) },
    ]);
    expect(resetIslands([[m('z', 1)]], SeededRng.fromKey(1), 0).resets).toEqual([]);
    expect(resetIslands([[], []], SeededRng.fromKey(1), 0).resets).toEqual([]);
  });
});

describe('improveStepScale', () => {
  const node = (
    slot: number,
    island: number,
    operator: NodeRecord['operator'],
    score: number | null,
    outcome: NodeRecord['outcome'] = score === null ? 'buggy' : 'scored',
    stepScale?: number,
  ): NodeRecord => ({
    ...(stepScale !== undefined ? { stepScale } : {}),
    type: 'node',
    taskId: 't',
    attemptId: `t:g0:s${slot}:d0:t0`,
    generation: 0,
    slot,
    depth: 0,
    try: 0,
    island,
    operator,
    parentIds: operator === 'improve' ? ['p'] : [],
    program: { language: 'python', source: '' },
    codeHash: `h${slot}`,
    outcome,
    result:
      score === null
        ? null
        : {
            status: 'ok',
            score,
            signature: [],
            metrics: {},
            stderrTail: '',
            evalMs: 1,
            evaluatorVersion: 'v',
          },
    error: null,
    costUsd: 0,
    infraRetries: 0,
    timings: { startedAt: 0, opMs: 0, queueMs: 0, evalMs: 0, totalMs: 0 },
  });

  it('grows on a new island best, shrinks on a miss, ignores other islands and operators', () => {
    const nodes = [
      node(0, 0, 'draft', 10),
      node(1, 0, 'improve', 9), // miss (minimise: 9 beats 10? no: maximise here)
      node(2, 1, 'improve', 100), // another island
      node(3, 0, 'improve', 11), // new best
      node(4, 0, 'crossover', 50), // raises the best without counting
      node(5, 0, 'improve', 20), // miss: below 50
      node(6, 0, 'improve', null), // buggy: miss
      node(7, 0, 'improve', null, 'unscored'), // infrastructure: not counted
    ];
    const expected = Math.min(1, STEP_SHRINK * STEP_GROW) * STEP_SHRINK * STEP_SHRINK;
    expect(improveStepScale(nodes, 0, 'maximise')).toBeCloseTo(expected, 12);
    // Minimising, 9 is the new best at slot 1 and 11 a miss.
    expect(improveStepScale(nodes.slice(0, 4), 0, 'minimise')).toBeCloseTo(STEP_SHRINK, 12);
  });

  it('stays within its bounds and starts counting once the island has a best', () => {
    const misses = [
      node(0, 0, 'draft', 1),
      ...Array.from({ length: 200 }, (_, i) => node(i + 1, 0, 'improve', 0)),
    ];
    expect(improveStepScale(misses, 0, 'maximise')).toBe(STEP_SCALE_MIN);
    const wins = [
      node(0, 0, 'draft', 0),
      ...Array.from({ length: 20 }, (_, i) => node(i + 1, 0, 'improve', i + 1)),
    ];
    expect(improveStepScale(wins, 0, 'maximise')).toBe(1);
    expect(improveStepScale([node(0, 0, 'improve', 5)], 0, 'maximise')).toBe(1);
  });

  it('bandit: picks the arm whose children set island bests, and explores the others', () => {
    // Arm 4 found 8 bests in 10 children, arm ¼ none in 10, arm 1 none in 10.
    const nodes = [node(0, 0, 'draft', 0)];
    let slot = 1;
    let score = 0;
    for (const arm of STEP_ARMS) {
      for (let k = 0; k < 10; k++) {
        const win = arm === 4 && k < 8;
        if (win) score++;
        nodes.push(node(slot++, 0, 'improve', win ? score : -1, 'scored', arm));
      }
    }
    const rng = SeededRng.fromKey(5, 'bandit');
    const picks = Array.from({ length: 400 }, () => banditStepScale(nodes, 'maximise', rng));
    const share = (arm: number) => picks.filter((p) => p === arm).length / picks.length;
    expect(share(4)).toBeGreaterThan(0.9);
    // Without a record every arm is as likely (uniform Beta(1, 1) draws).
    const fresh = Array.from({ length: 600 }, () =>
      banditStepScale([node(0, 0, 'draft', 0)], 'maximise', rng),
    );
    for (const arm of STEP_ARMS) {
      const n = fresh.filter((p) => p === arm).length;
      expect(n).toBeGreaterThan(140);
      expect(n).toBeLessThan(260);
    }
  });

  it('bandit: counts a child without a recorded scale as arm 1, and buggy ones as misses', () => {
    const nodes = [node(0, 0, 'draft', 0)];
    for (let k = 1; k <= 30; k++) nodes.push(node(k, 0, 'improve', null)); // buggy, arm 1
    const rng = SeededRng.fromKey(6, 'bandit');
    const picks = Array.from({ length: 300 }, () => banditStepScale(nodes, 'maximise', rng));
    expect(picks.filter((p) => p === 1).length).toBeLessThan(30);
  });
});
