/** Whether the search looks for the largest or the smallest score. */
export const Direction = {
  /** Higher scores are better (accuracy, sum of radii). */
  MAXIMISE: 'maximise',
  /** Lower scores are better (bins used, error). */
  MINIMISE: 'minimise',
} as const;

/** One of the {@link Direction} values. */
export type Direction = (typeof Direction)[keyof typeof Direction];

/**
 * The fitness of a score: the score when maximising, its negation when minimising, so that
 * everywhere inside the search a higher fitness is better.
 */
export function fitnessOf(score: number, direction: Direction): number {
  return direction === Direction.MAXIMISE ? score : -score;
}

/** The score a fitness came from (inverse of {@link fitnessOf}). */
export function scoreOf(fitness: number, direction: Direction): number {
  return direction === Direction.MAXIMISE ? fitness : -fitness;
}
