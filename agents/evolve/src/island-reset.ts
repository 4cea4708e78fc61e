import { islandBest, type IslandMember } from './island';
import { type SeededRng } from './seeded-rng';

/** One island emptied and founded again. */
export interface IslandReset {
  /** The island reset. */
  island: number;
  /** The island whose best member founded it. */
  from: number;
  /** That member. */
  nodeId: string;
}

/** The result of {@link resetIslands}. */
export interface ResetOutcome {
  /** Islands after the reset. */
  islands: IslandMember[][];
  /** Resets that happened, by island. */
  resets: IslandReset[];
  /** Members the reset islands lost. */
  evicted: { island: number; nodeId: string }[];
  /** `joinedAt` to give the next arrival. */
  nextJoinedAt: number;
}

/**
 * FunSearch's island reset: the islands are ranked by best fitness (ties: the lower index ranks
 * higher), the worse half (⌊n/2⌋ islands; an empty island ranks last) is emptied, and each is
 * founded again with a copy of the best member of an island of the better half, chosen with
 * `rng`. The founder joins as a migrant (it never migrates again). Islands of the better half
 * that are empty found nothing; with fewer than two islands nothing happens.
 */
export function resetIslands(
  islands: readonly (readonly IslandMember[])[],
  rng: SeededRng,
  nextJoinedAt: number,
): ResetOutcome {
  const n = islands.length;
  const out = islands.map((members) => [...members]);
  const resets: IslandReset[] = [];
  const evicted: { island: number; nodeId: string }[] = [];
  let joinedAt = nextJoinedAt;
  const ranked = [...islands.keys()].sort(
    (a, b) => islandBest(islands[b] ?? []) - islandBest(islands[a] ?? []) || a - b,
  );
  const keep = ranked.slice(0, Math.ceil(n / 2)).filter((i) => (islands[i] ?? []).length > 0);
  if (n < 2 || keep.length === 0) return { islands: out, resets, evicted, nextJoinedAt };
  for (const island of ranked.slice(Math.ceil(n / 2)).sort((a, b) => a - b)) {
    const from = rng.pick(keep);
    const founder = bestMember(islands[from] ?? []);
    if (!founder) continue;
    for (const m of out[island] ?? []) evicted.push({ island, nodeId: m.nodeId });
    out[island] = [{ ...founder, migrant: true, joinedAt: joinedAt++ }];
    resets.push({ island, from, nodeId: founder.nodeId });
  }
  return { islands: out, resets, evicted, nextJoinedAt: joinedAt };
}

function bestMember(members: readonly IslandMember[]): IslandMember | undefined {
  return [...members].sort((a, b) => b.fitness - a.fitness || a.joinedAt - b.joinedAt)[0];
}
