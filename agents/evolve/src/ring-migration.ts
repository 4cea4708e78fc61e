import { evictWorst, type IslandMember } from './island';

/** One member copied from an island to the next one in the ring. */
export interface MigrationMove {
  /** Source island. */
  from: number;
  /** Target island (`(from + 1) mod islands`). */
  to: number;
  /** The migrating node. */
  nodeId: string;
}

/** The result of {@link ringMigration}. */
export interface MigrationOutcome {
  /** Islands after migration and eviction. */
  islands: IslandMember[][];
  /** Moves that happened (a candidate whose program the target already holds does not move). */
  moves: MigrationMove[];
  /** Members evicted from targets that grew above `maxSize`, by island. */
  evicted: { island: number; nodeId: string }[];
  /** `joinedAt` to give the next arrival. */
  nextJoinedAt: number;
}

/**
 * Ring migration: every island sends copies of its `topK` best members to the next island
 * (`i → i+1`, the last to the first). All candidates are taken from the islands as they were
 * before the round, so nothing moves twice in one round. Never sent: migrants (a migrant never
 * migrates again) and nodes that migrated before (`alreadyMigrated`). A candidate is dropped when
 * the target already holds a program with the same code hash. Migrants join as members flagged
 * `migrant` (no admission test), and a target above `maxSize` evicts its worst.
 */
export function ringMigration(
  islands: readonly (readonly IslandMember[])[],
  options: {
    topK: number;
    maxSize: number;
    alreadyMigrated: ReadonlySet<string>;
    nextJoinedAt: number;
  },
): MigrationOutcome {
  const n = islands.length;
  const out = islands.map((members) => [...members]);
  const moves: MigrationMove[] = [];
  const evicted: { island: number; nodeId: string }[] = [];
  let joinedAt = options.nextJoinedAt;
  if (n < 2) return { islands: out, moves, evicted, nextJoinedAt: joinedAt };
  const candidates = islands.map((members) =>
    members
      .filter((m) => !m.migrant && !options.alreadyMigrated.has(m.nodeId))
      .sort((a, b) => b.fitness - a.fitness || a.joinedAt - b.joinedAt)
      .slice(0, options.topK),
  );
  for (let from = 0; from < n; from++) {
    const to = (from + 1) % n;
    for (const m of candidates[from] ?? []) {
      const target = out[to] as IslandMember[];
      if (target.some((t) => t.codeHash === m.codeHash)) continue;
      target.push({ ...m, migrant: true, joinedAt: joinedAt++ });
      moves.push({ from, to, nodeId: m.nodeId });
    }
  }
  for (let i = 0; i < n; i++) {
    const after = evictWorst(out[i] as IslandMember[], options.maxSize);
    out[i] = after.members;
    for (const e of after.evicted) evicted.push({ island: i, nodeId: e.nodeId });
  }
  return { islands: out, moves, evicted, nextJoinedAt: joinedAt };
}
