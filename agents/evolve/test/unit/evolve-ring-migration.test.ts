import { type IslandMember } from '../../src/island';
import { ringMigration } from '../../src/ring-migration';

let joined = 0;
const m = (nodeId: string, fitness: number, extra: Partial<IslandMember> = {}): IslandMember => ({
  nodeId,
  fitness,
  codeHash: `h-${nodeId}`,
  migrant: false,
  joinedAt: joined++,
  ...extra,
});
const ids = (island: readonly IslandMember[]) => island.map((x) => x.nodeId);
const opts = (extra: Partial<Parameters<typeof ringMigration>[1]> = {}) => ({
  topK: 1,
  maxSize: 10,
  alreadyMigrated: new Set<string>(),
  nextJoinedAt: 100,
  ...extra,
});

describe('ringMigration', () => {
  it('sends the top k of every island to the next one, the last to the first', () => {
    const islands = [[m('a1', 1), m('a2', 5)], [m('b1', 7), m('b2', 3)], [m('c1', 2)]];
    const out = ringMigration(islands, opts());
    expect(out.moves).toEqual([
      { from: 0, to: 1, nodeId: 'a2' },
      { from: 1, to: 2, nodeId: 'b1' },
      { from: 2, to: 0, nodeId: 'c1' },
    ]);
    expect(ids(out.islands[1]!)).toEqual(['b1', 'b2', 'a2']);
    const arrived = out.islands[1]!.find((x) => x.nodeId === 'a2')!;
    expect(arrived).toMatchObject({ migrant: true, joinedAt: 100 });
    expect(out.nextJoinedAt).toBe(103);
    // Candidates come from the islands before the round: b1 moved on, a2 did not move twice.
    expect(ids(out.islands[2]!)).toEqual(['c1', 'b1']);
    expect(ringMigration(islands, opts({ topK: 2 })).moves).toHaveLength(5);
  });

  it('never sends a migrant again, nor a node that migrated before', () => {
    const islands = [[m('star', 9, { migrant: true }), m('ok', 1)], [m('x', 0)]];
    expect(ringMigration(islands, opts()).moves.map((mv) => mv.nodeId)).toEqual(['ok', 'x']);
    const again = ringMigration(islands, opts({ alreadyMigrated: new Set(['ok']) }));
    expect(again.moves.map((mv) => mv.nodeId)).toEqual(['x']);
  });

  it('deduplicates by code hash: a target holding the same program gets no copy', () => {
    const islands = [[m('a', 5, { codeHash: 'same' })], [m('b', 1, { codeHash: 'same' })]];
    const out = ringMigration(islands, opts());
    expect(out.moves).toEqual([]);
    expect(out.islands).toEqual(islands);
  });

  it('evicts the worst of a target above max size', () => {
    const islands = [[m('top', 9)], [m('w', 0), m('v', 1)]];
    const out = ringMigration(islands, opts({ maxSize: 2 }));
    expect(ids(out.islands[1]!)).toEqual(['v', 'top']);
    expect(out.evicted).toEqual([{ island: 1, nodeId: 'w' }]);
  });

  it('does nothing with one island', () => {
    expect(ringMigration([[m('solo', 1)]], opts()).moves).toEqual([]);
  });
});
