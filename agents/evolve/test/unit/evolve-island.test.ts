import {
  admitChild,
  chooseIsland,
  evictWorst,
  islandAverage,
  type IslandMember,
  sampleParents,
} from '../../src/island';
import { fitnessOf } from '../../src/direction';
import { SeededRng } from '../../src/seeded-rng';
import { softmaxOverNormalised } from '../../src/softmax';

let joined = 0;
function member(nodeId: string, fitness: number, extra: Partial<IslandMember> = {}): IslandMember {
  return { nodeId, fitness, codeHash: `h-${nodeId}`, migrant: false, joinedAt: joined++, ...extra };
}

describe('admission', () => {
  const island = [member('a', 1), member('b', 2), member('c', 3)]; // average 2

  it('admits any non-buggy child into an empty island', () => {
    const out = admitChild([], member('x', -100), 5);
    expect(out).toMatchObject({ admitted: true, reason: 'empty_island', evicted: [] });
    expect(out.members.map((m) => m.nodeId)).toEqual(['x']);
  });

  it('admits a child at exactly the island average, refuses one below', () => {
    expect(admitChild(island, member('eq', 2), 10)).toMatchObject({
      admitted: true,
      reason: 'at_least_average',
    });
    const below = admitChild(island, member('lo', 1.999), 10);
    expect(below).toMatchObject({ admitted: false, reason: 'below_average' });
    expect(below.members).toEqual(island);
  });

  it('is direction-aware through fitness: when minimising, a lower score is admitted', () => {
    const scores = [212, 210, 208]; // bins: average 210
    const min = scores.map((s, i) => member(`m${i}`, fitnessOf(s, 'minimise')));
    expect(admitChild(min, member('good', fitnessOf(209, 'minimise')), 10).admitted).toBe(true);
    expect(admitChild(min, member('bad', fitnessOf(211, 'minimise')), 10).admitted).toBe(false);
  });

  it('refuses a program the island already holds', () => {
    const dup = member('dup', 99, { codeHash: 'h-c' });
    expect(admitChild(island, dup, 10)).toMatchObject({ admitted: false, reason: 'duplicate' });
  });

  it('evicts the worst above max size, the oldest among equals', () => {
    const full = [member('w1', 0), member('w2', 0), member('ok', 5)];
    const out = admitChild(full, member('new', 4), 3);
    expect(out.admitted).toBe(true);
    expect(out.evicted.map((m) => m.nodeId)).toEqual(['w1']);
    expect(out.members.map((m) => m.nodeId)).toEqual(['w2', 'ok', 'new']);
    expect(evictWorst(full, 1).members.map((m) => m.nodeId)).toEqual(['ok']);
    expect(evictWorst(full, 5).evicted).toEqual([]);
  });

  it('computes the average of an island (NaN when empty)', () => {
    expect(islandAverage(island)).toBe(2);
    expect(islandAverage([])).toBeNaN();
  });
});

describe('softmax choices', () => {
  it('normalises, then sharpens with low temperature and flattens with high', () => {
    expect(softmaxOverNormalised([5, 5, 5], 1)).toEqual([1 / 3, 1 / 3, 1 / 3]);
    const cold = softmaxOverNormalised([0, 10], 0.05);
    const hot = softmaxOverNormalised([0, 10], 100);
    expect(cold[1]).toBeGreaterThan(0.999);
    expect(hot[1]).toBeCloseTo(0.5, 2);
    // Normalisation: the scale of the values does not matter, only their order and spacing.
    expect(softmaxOverNormalised([0, 1000], 1)).toEqual(softmaxOverNormalised([0, 1], 1));
  });

  it('chooses islands by best fitness, and still chooses an empty island sometimes', () => {
    const islands = [[member('a', 1)], [member('b', 10)], []];
    const counts = [0, 0, 0];
    for (let i = 0; i < 3000; i++) counts[chooseIsland(islands, 1, SeededRng.fromKey('c', i))]!++;
    // Normalised [0, 1, 0] at temperature 1: e / (e + 2) ≈ 0.576 for the best island.
    expect(counts[1]! / 3000).toBeCloseTo(Math.E / (Math.E + 2), 1);
    expect(counts[2]).toBeGreaterThan(0);
  });

  it('samples distinct parents, favouring the fit, deterministically for a seed', () => {
    const island = [member('p0', 0), member('p1', 1), member('p2', 2)];
    const two = sampleParents(island, 2, 0.5, SeededRng.fromKey('s'));
    expect(new Set(two.map((m) => m.nodeId)).size).toBe(2);
    expect(sampleParents(island, 2, 0.5, SeededRng.fromKey('s'))).toEqual(two);
    expect(sampleParents(island, 5, 0.5, SeededRng.fromKey('s'))).toHaveLength(3);
    let best = 0;
    for (let i = 0; i < 500; i++) {
      if (sampleParents(island, 1, 0.2, SeededRng.fromKey('f', i))[0]?.nodeId === 'p2') best++;
    }
    expect(best).toBeGreaterThan(350);
  });
});

describe('SeededRng', () => {
  it('repeats for a key, differs across keys, and stays in range', () => {
    const a = SeededRng.fromKey(1, 'x');
    const b = SeededRng.fromKey(1, 'x');
    const c = SeededRng.fromKey(2, 'x');
    const seqA = Array.from({ length: 5 }, () => a.next());
    expect(Array.from({ length: 5 }, () => b.next())).toEqual(seqA);
    expect(Array.from({ length: 5 }, () => c.next())).not.toEqual(seqA);
    const r = SeededRng.fromKey('range');
    for (let i = 0; i < 1000; i++) {
      const v = r.int(3, 5);
      expect(v >= 3 && v <= 5 && Number.isInteger(v)).toBe(true);
      const u = r.next();
      expect(u >= 0 && u < 1).toBe(true);
    }
    expect(r.weightedIndex([0, 0, 1])).toBe(2);
  });
});
