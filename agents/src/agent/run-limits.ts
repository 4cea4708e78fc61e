import { ErrorCode, errorCode, hasErrorCode, toTroupeError } from '@troupe/proto';
import type { AgentRunState } from './agent-state';
import { AgentStopReason } from './agent-stop-reason';
import type { AgentLimits } from './agent-template';

/**
 * The limit a run has reached before its next model call (steps, tokens, wall time since its
 * start after `elapsedMs`), or undefined.
 */
export function limitReached(
  run: AgentRunState,
  limits: AgentLimits,
  elapsedMs: number,
): AgentStopReason | undefined {
  if (run.steps >= limits.maxSteps) return AgentStopReason.MAX_STEPS;
  if (limits.maxTokens !== undefined && run.inputTokens + run.outputTokens >= limits.maxTokens) {
    return AgentStopReason.MAX_TOKENS;
  }
  if (limits.maxWallMs !== undefined && elapsedMs >= limits.maxWallMs) {
    return AgentStopReason.WALL_TIME;
  }
  return undefined;
}

/**
 * How a run stops after its model call (or compaction) failed with `err`: BUDGET_EXHAUSTED,
 * WALL_TIME (a timeout under `maxWallMs`), or MODEL_ERROR — with the error to record; undefined
 * for a retryable failure other than UNAVAILABLE, which the turn rethrows (a later attempt may
 * succeed).
 */
export function modelFailureStop(
  err: unknown,
  limits: AgentLimits,
): { reason: AgentStopReason; error: string } | undefined {
  const e = toTroupeError(err);
  if (hasErrorCode(e, ErrorCode.BUDGET_EXHAUSTED)) {
    return { reason: AgentStopReason.BUDGET_EXHAUSTED, error: e.message };
  }
  if (hasErrorCode(e, ErrorCode.TIMEOUT) && limits.maxWallMs !== undefined) {
    return { reason: AgentStopReason.WALL_TIME, error: e.message };
  }
  if (e.retryable && errorCode(e) !== ErrorCode.UNAVAILABLE) return undefined;
  return { reason: AgentStopReason.MODEL_ERROR, error: `${e.code}: ${e.message}` };
}
