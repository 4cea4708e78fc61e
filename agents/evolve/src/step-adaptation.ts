import { fitnessOf, type Direction } from './direction';
import { type NodeRecord } from './journal-record';

/** Factor after an Improve child that set a new island best (the 1/5 rule's expansion). */
export const STEP_GROW = 1.5;
/** Factor after one that did not: `STEP_GROW^-¼`, so a 1-in-5 success rate keeps the step. */
export const STEP_SHRINK = STEP_GROW ** -0.25;
/** Bounds of the scale, as multiples of `mutationSigma`. */
export const STEP_SCALE_MIN = 1 / 16;
/**
 * `mutationSigma` is the first and the largest step: with budgets of a few hundred evaluations,
 * early records (drafts are still improving fast) would otherwise grow the step far past the
 * configured one and the island would spend its budget shrinking it back (measured on the toy
 * task of the search-runner tests: the optimum was missed by 0.74 with a cap of 4, 0.14 with 1,
 * against 0.22 for the fixed step).
 */
export const STEP_SCALE_MAX = 1;

/**
 * The 1/5 success rule of a (1+1) evolution strategy, per island: the multiple of
 * `mutationSigma` the island's next Improve child uses. It walks the island's nodes in position
 * order, keeping the island's best score so far. It starts at 1; after each Improve child (a
 * first attempt) it is multiplied by {@link STEP_GROW} when the child beat that best, by
 * {@link STEP_SHRINK} when it did not (a buggy child is a miss), and clamped into
 * [{@link STEP_SCALE_MIN}, {@link STEP_SCALE_MAX}]. Success is measured against the island's
 * best rather than the child's parent because parents are sampled from the whole population:
 * beating a mediocre parent is easy and says nothing about the step near the best.
 * Children still being evaluated and unscored ones (an infrastructure failure) do not count.
 *
 * It reads node records only, so the same journal gives the same scale: the generational
 * schedule computes it when it plans a generation, the async one when it plans a slot (and
 * journals it in the plan).
 */
export function improveStepScale(
  nodesInPositionOrder: readonly NodeRecord[],
  island: number,
  direction: Direction,
): number {
  let scale = 1;
  let best = Number.NEGATIVE_INFINITY;
  for (const node of nodesInPositionOrder) {
    if (node.island !== island) continue;
    const fitness =
      node.outcome === 'scored' && node.result?.score != null
        ? fitnessOf(node.result.score, direction)
        : null;
    if (node.operator === 'improve' && node.depth === 0 && best > Number.NEGATIVE_INFINITY) {
      if (fitness !== null || node.outcome === 'buggy') {
        const beat = fitness !== null && fitness > best;
        scale = Math.min(
          STEP_SCALE_MAX,
          Math.max(STEP_SCALE_MIN, scale * (beat ? STEP_GROW : STEP_SHRINK)),
        );
      }
    }
    if (fitness !== null) best = Math.max(best, fitness);
  }
  return scale;
}

/** The step scales the `bandit` mode chooses among, as multiples of `mutationSigma`. */
export const STEP_ARMS: readonly number[] = [0.25, 1, 4];

/**
 * Thompson sampling over {@link STEP_ARMS}: each arm's record is the search's earlier Improve
 * children that used it (first attempts, any island, in position order), a success being a child
 * that beat its island's best so far (a buggy child is a failure). One draw from each arm's
 * Beta(1 + successes, 1 + failures) with `rng`; the largest draw's arm is used. Arms are the
 * child's recorded `stepScale` (1 when absent). An arm that finds improvements gets more
 * children, whatever the landscape: small steps near a smooth optimum, large ones across
 * plateaus, where the 1/5 rule would only shrink the step.
 */
export function banditStepScale(
  nodesInPositionOrder: readonly NodeRecord[],
  direction: Direction,
  rng: { next(): number },
): number {
  const wins = STEP_ARMS.map(() => 0);
  const losses = STEP_ARMS.map(() => 0);
  const best = new Map<number, number>();
  for (const node of nodesInPositionOrder) {
    const fitness =
      node.outcome === 'scored' && node.result?.score != null
        ? fitnessOf(node.result.score, direction)
        : null;
    const islandBest = best.get(node.island);
    if (node.operator === 'improve' && node.depth === 0 && islandBest !== undefined) {
      const arm = STEP_ARMS.indexOf(node.stepScale ?? 1);
      if (arm >= 0 && (fitness !== null || node.outcome === 'buggy')) {
        if (fitness !== null && fitness > islandBest) wins[arm]! += 1;
        else losses[arm]! += 1;
      }
    }
    if (fitness !== null) best.set(node.island, Math.max(islandBest ?? fitness, fitness));
  }
  let chosen = 0;
  let top = Number.NEGATIVE_INFINITY;
  STEP_ARMS.forEach((_, arm) => {
    const draw = betaSample(1 + wins[arm]!, 1 + losses[arm]!, rng);
    if (draw > top) {
      top = draw;
      chosen = arm;
    }
  });
  return STEP_ARMS[chosen]!;
}

/** A Beta(a, b) draw for integer a, b ≥ 1: Gamma(a) / (Gamma(a) + Gamma(b)), sums of exponentials. */
function betaSample(a: number, b: number, rng: { next(): number }): number {
  const gamma = (k: number): number => {
    let sum = 0;
    for (let i = 0; i < k; i++) sum -= Math.log(1 - rng.next());
    return sum;
  };
  const x = gamma(a);
  return x / (x + gamma(b));
}
