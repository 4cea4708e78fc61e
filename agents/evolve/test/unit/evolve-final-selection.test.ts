import { selectFinal } from '../../src/final-selection';
import { attemptIdOf, type NodeRecord } from '../../src/journal-record';

function node(
  slot: number,
  outcome: NodeRecord['outcome'],
  score: number | null,
  source = `p${slot}`,
): NodeRecord {
  const position = { taskId: 't', generation: 1, slot, depth: 0, try: 0 };
  return {
    type: 'node',
    ...position,
    attemptId: attemptIdOf(position),
    island: 0,
    operator: 'improve',
    parentIds: [],
    program: { language: 'python', source },
    codeHash: `h${slot}`,
    outcome,
    result:
      outcome === 'scored' || outcome === 'buggy'
        ? {
            status: outcome === 'scored' ? 'ok' : 'error',
            score,
            signature: [],
            metrics: {},
            stderrTail: '',
            evalMs: 1,
            evaluatorVersion: 'v',
          }
        : null,
    error: null,
    costUsd: 0,
    infraRetries: 0,
    timings: { startedAt: 0, opMs: 0, queueMs: 0, evalMs: 0, totalMs: 0 },
  };
}
const opts = { seed: 7, direction: 'maximise' as const };

describe('selectFinal', () => {
  it('picks the best validation score among scored nodes, direction-aware', () => {
    const nodes = [
      node(0, 'scored', 3),
      node(1, 'scored', 5),
      node(2, 'buggy', null),
      node(3, 'scored', 1),
    ];
    expect(selectFinal(nodes, opts)).toMatchObject({ source: 'best_validation', score: 5 });
    expect(selectFinal(nodes, { ...opts, direction: 'minimise' }).node?.slot).toBe(3);
  });

  it('breaks ties by position, whatever the input order', () => {
    const nodes = [node(4, 'scored', 5), node(2, 'scored', 5)];
    expect(selectFinal(nodes, opts).node?.slot).toBe(2);
  });

  it('falls back to a seeded random code-bearing node flagged random_no_valid', () => {
    const nodes = [
      node(0, 'buggy', null),
      node(1, 'unscored', null),
      node(2, 'no_code', null, ''),
      node(3, 'buggy', null),
    ];
    const a = selectFinal(nodes, opts);
    expect(a.source).toBe('random_no_valid');
    expect(a.score).toBeNull();
    expect(a.node?.program.source).not.toBe('');
    expect(selectFinal([...nodes].reverse(), opts).node?.attemptId).toBe(a.node?.attemptId);
    const picks = new Set(
      Array.from({ length: 20 }, (_, seed) => selectFinal(nodes, { ...opts, seed }).node?.slot),
    );
    expect(picks.size).toBeGreaterThan(1);
    expect(picks.has(2)).toBe(false);
  });

  it('selects nothing when no node carries code', () => {
    expect(selectFinal([node(0, 'no_code', null, '')], opts)).toEqual({
      node: null,
      source: 'none',
      score: null,
    });
    expect(selectFinal([], opts).source).toBe('none');
  });
});
