/** Bounds of one Debug chain. */
export interface DebugChainLimits {
  /** Debug attempts allowed after the buggy child. */
  maxDepth: number;
  /** Total time of the chain's debug attempts, in ms. */
  maxTimeMs: number;
}

/** Where a Debug chain stands after an attempt. */
export interface DebugChainProgress {
  /** Whether the operators can debug at all (LLM operators only). */
  canDebug: boolean;
  /** Depth of the attempt just made (0 = the child itself). */
  depth: number;
  /** Time spent on the chain's debug attempts so far, in ms. */
  elapsedMs: number;
  /** How the attempt just made ended. */
  lastOutcome: 'scored' | 'buggy' | 'unscored' | 'no_code';
  /** Further attempts the slot's evaluation budget allows. */
  attemptsLeft: number;
}

/** Why a Debug chain stops (or `continue`). */
export type DebugChainDecision =
  | 'continue'
  | 'fixed'
  | 'not_debuggable'
  | 'builtin_operators'
  | 'max_depth'
  | 'max_time'
  | 'budget';

/**
 * Whether to make another Debug attempt. Only a buggy result (invalid, error, timeout) is debugged;
 * a scored one ends the chain (`fixed`), and so do an infrastructure failure or an operator that
 * produced no code (`not_debuggable`: execution/parse exceptions end the chain). Built-in
 * operators never debug. Otherwise the chain continues while depth, time and budget allow.
 */
export function nextDebugStep(
  progress: DebugChainProgress,
  limits: DebugChainLimits,
): DebugChainDecision {
  if (progress.lastOutcome === 'scored') return 'fixed';
  if (progress.lastOutcome !== 'buggy') return 'not_debuggable';
  if (!progress.canDebug) return 'builtin_operators';
  if (progress.depth >= limits.maxDepth) return 'max_depth';
  if (progress.elapsedMs >= limits.maxTimeMs) return 'max_time';
  if (progress.attemptsLeft <= 0) return 'budget';
  return 'continue';
}
