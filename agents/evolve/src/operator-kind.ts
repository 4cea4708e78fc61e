/** How a node's program came to be. */
export const OperatorKind = {
  /** A seed program of the task, evaluated unchanged (generation 0). */
  SEED: 'seed',
  /** A new program from the task (and its seeds): generation 0, or an empty island. */
  DRAFT: 'draft',
  /** A variation of one parent. */
  IMPROVE: 'improve',
  /** A combination of two parents. */
  CROSSOVER: 'crossover',
  /** A repair of a buggy node (LLM operators only). */
  DEBUG: 'debug',
} as const;

/** One of the {@link OperatorKind} values. */
export type OperatorKind = (typeof OperatorKind)[keyof typeof OperatorKind];
