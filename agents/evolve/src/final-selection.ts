import { type Direction, fitnessOf } from './direction';
import { type NodeRecord, type SelectionSource } from './journal-record';
import { comparePositions } from './search-state';
import { SeededRng } from './seeded-rng';

/** The node final selection chose, and how. */
export interface FinalSelection {
  /** The chosen node, or null when no node carries code. */
  node: NodeRecord | null;
  /** `best_validation`, `random_no_valid` (flagged fallback) or `none`. */
  source: SelectionSource;
  /** Its validation score (`best_validation` only). */
  score: number | null;
}

/**
 * Final selection (pure): the node with the best validation score among scored nodes (ties go to
 * the earliest position: generation, slot, depth, try). If no node scored, a code-bearing node is
 * chosen at random with a generator seeded by `<seed>:final_select` over the nodes in
 * position order, and flagged `random_no_valid` so nobody mistakes it for a validated program.
 * With no code-bearing node at all, nothing is selected (`none`).
 */
export function selectFinal(
  nodes: readonly NodeRecord[],
  options: { seed: number; direction: Direction },
): FinalSelection {
  const ordered = [...nodes].sort(comparePositions);
  let best: NodeRecord | null = null;
  let bestFitness = Number.NEGATIVE_INFINITY;
  for (const n of ordered) {
    const score = n.outcome === 'scored' ? n.result?.score : null;
    if (score == null || !Number.isFinite(score)) continue;
    const fitness = fitnessOf(score, options.direction);
    if (fitness > bestFitness) {
      best = n;
      bestFitness = fitness;
    }
  }
  if (best) return { node: best, source: 'best_validation', score: best.result?.score ?? null };
  const codeBearing = ordered.filter((n) => n.program.source.trim() !== '');
  if (codeBearing.length === 0) return { node: null, source: 'none', score: null };
  const rng = SeededRng.fromKey(options.seed, 'final_select');
  return { node: rng.pick(codeBearing), source: 'random_no_valid', score: null };
}
