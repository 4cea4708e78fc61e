import { type EvaluatorResult } from './evaluator-result';
import { type Program } from './program';
import { type SeededRng } from './seeded-rng';

/** A parent (or a buggy node to debug) as an operator sees it. */
export interface OperatorParent {
  /** Node id (= its attempt id). */
  nodeId: string;
  /** The parent's program. */
  program: Program;
  /** Its evaluator result, when it was evaluated. */
  result: EvaluatorResult | null;
}

/** What every operator call receives. */
export interface OperatorContext {
  /** Randomness for this call only, keyed by the attempt's position in the search. */
  rng: SeededRng;
  /** Aborted at the operator deadline or when the search stops. */
  signal: AbortSignal;
  /** The task's seed programs. */
  seeds: readonly Program[];
  /** The generation the child belongs to. */
  generation: number;
  /**
   * Improve: multiple of the configured step size for this child (step-size adaptation; 1 when
   * off). Operators without a step size ignore it.
   */
  stepScale: number;
}

/** An operator's output: the child program and what producing it cost. */
export interface Proposal {
  /** The child program. */
  program: Program;
  /** USD spent on model calls for it. */
  costUsd: number;
}

/**
 * The four search operators. Implemented by {@link BuiltinOperators} (no model; parameters
 * marked with `troupe:param`) and {@link LlmOperator} (a chat model). An operator that cannot
 * produce a program throws; the search records the attempt as `no_code`.
 */
export interface SearchOperators {
  /** Whether {@link SearchOperators.debug} is available (Debug chains run only then). */
  readonly canDebug: boolean;
  /** A new program from the task and its seeds. */
  draft(ctx: OperatorContext): Promise<Proposal>;
  /** A variation of one parent. */
  improve(parent: OperatorParent, ctx: OperatorContext): Promise<Proposal>;
  /** A combination of two parents. */
  crossover(a: OperatorParent, b: OperatorParent, ctx: OperatorContext): Promise<Proposal>;
  /** A repair of a buggy program, given its evaluator result. */
  debug(buggy: OperatorParent, ctx: OperatorContext): Promise<Proposal>;
}
