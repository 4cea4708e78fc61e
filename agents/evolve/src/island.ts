import { softmaxOverNormalised } from './softmax';
import { type SeededRng } from './seeded-rng';

/** A member of an island's population. */
export interface IslandMember {
  /** The node (attempt id) whose program this is. */
  nodeId: string;
  /** Direction-adjusted score: higher is better. */
  fitness: number;
  /** Hash of the program source (deduplication). */
  codeHash: string;
  /** Whether the member arrived by migration; a migrant never migrates again. */
  migrant: boolean;
  /** Order of arrival across the search (ties in eviction go to the oldest). */
  joinedAt: number;
}

/** Why a child was or was not admitted. */
export const AdmissionReason = {
  /** The island was empty. */
  EMPTY_ISLAND: 'empty_island',
  /** Its fitness was at least the island average. */
  AT_LEAST_AVERAGE: 'at_least_average',
  /** Its fitness was below the island average. */
  BELOW_AVERAGE: 'below_average',
  /** The island already holds the same program. */
  DUPLICATE: 'duplicate',
} as const;

/** One of the {@link AdmissionReason} values. */
export type AdmissionReason = (typeof AdmissionReason)[keyof typeof AdmissionReason];

/** The result of {@link admitChild}. */
export interface AdmissionOutcome {
  /** The island after admission and eviction. */
  members: IslandMember[];
  /** Whether the child joined (it may still have been evicted at once if `maxSize` is tiny). */
  admitted: boolean;
  /** Why. */
  reason: AdmissionReason;
  /** Members evicted to get back to `maxSize`. */
  evicted: IslandMember[];
}

/** Mean fitness of the members; NaN for an empty island. */
export function islandAverage(members: readonly IslandMember[]): number {
  if (members.length === 0) return Number.NaN;
  return members.reduce((sum, m) => sum + m.fitness, 0) / members.length;
}

/** Best fitness of the members; `-Infinity` for an empty island. */
export function islandBest(members: readonly IslandMember[]): number {
  return members.reduce((best, m) => Math.max(best, m.fitness), Number.NEGATIVE_INFINITY);
}

/**
 * Removes the worst members until at most `maxSize` remain: lowest fitness first, among equals
 * the one that joined first. Returns the survivors (in their original order) and the evicted.
 */
export function evictWorst(
  members: readonly IslandMember[],
  maxSize: number,
): { members: IslandMember[]; evicted: IslandMember[] } {
  const excess = members.length - maxSize;
  if (excess <= 0) return { members: [...members], evicted: [] };
  const byWorst = [...members].sort((a, b) => a.fitness - b.fitness || a.joinedAt - b.joinedAt);
  const evicted = byWorst.slice(0, excess);
  const gone = new Set(evicted.map((m) => m.nodeId));
  return { members: members.filter((m) => !gone.has(m.nodeId)), evicted };
}

/**
 * The admission rule for a non-buggy child (the caller never offers buggy ones): it joins if the
 * island is empty or its fitness is at least the island average (fitness is direction-adjusted,
 * so this is "score ≥ average" when maximising and "≤" when minimising); a program the island
 * already holds (same code hash) is refused. Above `maxSize` the worst are then evicted.
 */
export function admitChild(
  members: readonly IslandMember[],
  child: IslandMember,
  maxSize: number,
): AdmissionOutcome {
  if (members.some((m) => m.codeHash === child.codeHash)) {
    return { members: [...members], admitted: false, reason: 'duplicate', evicted: [] };
  }
  let reason: AdmissionReason;
  if (members.length === 0) reason = 'empty_island';
  else if (child.fitness >= islandAverage(members)) reason = 'at_least_average';
  else return { members: [...members], admitted: false, reason: 'below_average', evicted: [] };
  const after = evictWorst([...members, child], maxSize);
  return { members: after.members, admitted: true, reason, evicted: after.evicted };
}

/**
 * Samples `count` distinct members with probability given by a softmax over their normalised
 * fitness (see {@link softmaxOverNormalised}). Returns fewer when the island is smaller.
 */
export function sampleParents(
  members: readonly IslandMember[],
  count: number,
  temperature: number,
  rng: SeededRng,
): IslandMember[] {
  const pool = [...members];
  const out: IslandMember[] = [];
  while (out.length < count && pool.length > 0) {
    const probs = softmaxOverNormalised(
      pool.map((m) => m.fitness),
      temperature,
    );
    out.push(pool.splice(rng.weightedIndex(probs), 1)[0] as IslandMember);
  }
  return out;
}

/**
 * Chooses an island for the next child: softmax over the islands' normalised best fitness. An
 * empty island counts as the worst (it is normalised to 0 like the lowest), so it still gets
 * chosen now and then, and then drafts.
 */
export function chooseIsland(
  islands: readonly (readonly IslandMember[])[],
  temperature: number,
  rng: SeededRng,
): number {
  const bests = islands.map(islandBest);
  const finite = bests.filter(Number.isFinite);
  const floor = finite.length > 0 ? Math.min(...finite) : 0;
  const probs = softmaxOverNormalised(
    bests.map((b) => (Number.isFinite(b) ? b : floor)),
    temperature,
  );
  return rng.weightedIndex(probs);
}
