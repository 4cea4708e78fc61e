import { type EvaluatorResult } from './evaluator-result';
import { type Program } from './program';

/** Which data an evaluation grades against. */
export const EvaluationPhase = {
  /** The data the search sees scores of (fitness). */
  VALIDATION: 'validation',
  /** Hidden from the search: used once, on the selected program. */
  TEST: 'test',
} as const;

/** One of the {@link EvaluationPhase} values. */
export type EvaluationPhase = (typeof EvaluationPhase)[keyof typeof EvaluationPhase];

/** What the search asks an evaluator to do. */
export interface EvaluationRequest {
  /** The candidate program. */
  program: Program;
  /** Validation (search) or test (final grading). */
  phase: EvaluationPhase;
  /** The search attempt this evaluation belongs to; unique within the task. */
  attemptId: string;
  /** Hard deadline of the evaluation: the evaluator is killed when it passes. */
  timeoutMs: number;
  /**
   * 0 for the first try, 1 for the one retry after an infrastructure failure (an evaluator that
   * could not run or printed no valid result). `(attemptId, infraRetry)` identifies one run.
   */
  infraRetry: number;
}

/** Options of an {@link Evaluate} call. */
export interface EvaluateOptions {
  /** Aborted when the search stops or the deadline of the calling turn passes. */
  signal: AbortSignal;
  /**
   * Call when an evaluator has been acquired and the evaluation starts. The time before it is
   * the queue wait, reported separately and not charged to the search's time budget. When it is
   * never called, the search counts the call's duration minus the result's `evalMs` as waiting.
   */
  onStart?: () => void;
}

/**
 * Runs one evaluation: in a sandbox with no network and a hard kill at the deadline, the
 * evaluator runs the program and recomputes the score from its raw output. Returns the result for
 * every program outcome (ok, invalid, error, timeout); throws only for infrastructure failures,
 * which the search retries once.
 */
export type Evaluate = (
  request: EvaluationRequest,
  options: EvaluateOptions,
) => Promise<EvaluatorResult>;
