/** Why an agent run stopped; recorded in the run's result and its `run_end` trajectory event. */
export const AgentStopReason = {
  /** The model called `finish_task`. */
  FINISHED: 'FINISHED',
  /** The model answered without calling a tool (after any automatic "continue" prompts). */
  NO_TOOL_CALLS: 'NO_TOOL_CALLS',
  /** `limits.maxSteps` model calls were made. */
  MAX_STEPS: 'MAX_STEPS',
  /** `limits.maxTokens` tokens were used. */
  MAX_TOKENS: 'MAX_TOKENS',
  /** The next model call could not reserve its worst case within `limits.maxCostUsd` or the ledger. */
  BUDGET_EXHAUSTED: 'BUDGET_EXHAUSTED',
  /** `limits.maxWallMs` passed since the run started. */
  WALL_TIME: 'WALL_TIME',
  /** A middleware of the template stopped the run (e.g. `doom_loop` with `action: stop`). */
  STOPPED_BY_MIDDLEWARE: 'STOPPED_BY_MIDDLEWARE',
  /** The model call failed for good (retries exhausted, bad request, auth). */
  MODEL_ERROR: 'MODEL_ERROR',
  /**
   * A `cancel` for the run was posted (a user's job cancel, a parent's cancel, a final deadline):
   * the run stopped at its next safe point — an in-flight model call, tool or sync subagent wait
   * is aborted when the session hears of it, and no further model or tool call starts.
   */
  CANCELLED: 'CANCELLED',
  /**
   * The run was refused before it started: another run in progress (`BUSY`), no template, an
   * unregistered model, or sandbox tools without a sandbox.
   */
  REJECTED: 'REJECTED',
  /**
   * The run's turn failed on every attempt (a state or trajectory write that cannot succeed, a
   * bug): instead of the actor runtime dead-lettering the message and the run never ending, the
   * run ends with this reason and the error.
   */
  INTERNAL_ERROR: 'INTERNAL_ERROR',
} as const;
/** One of {@link AgentStopReason}. */
export type AgentStopReason = (typeof AgentStopReason)[keyof typeof AgentStopReason];
