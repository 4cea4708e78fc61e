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
