import type { AgentRunResult } from './agent-messages';
import type { AgentRunState } from './agent-state';
import { AgentStopReason } from './agent-stop-reason';

/**
 * The result of run `run` of session `sessionId` as its caller gets it: its own usage and cost
 * plus what its subagents reported (their share also under `subagents`).
 */
export function runResult(sessionId: string, run: AgentRunState): AgentRunResult {
  return {
    sessionId,
    runId: run.runId,
    stopReason: run.stopReason ?? AgentStopReason.MODEL_ERROR,
    finalText: run.finalText ?? '',
    steps: run.steps,
    // Subagents' spend is reported here (their calls were charged to the ledger already).
    usage: {
      inputTokens: run.inputTokens + (run.subagentInputTokens ?? 0),
      outputTokens: run.outputTokens + (run.subagentOutputTokens ?? 0),
    },
    costUsd: run.costUsd + (run.subagentCostUsd ?? 0),
    ...(run.subagentCostUsd !== undefined
      ? {
          subagents: {
            costUsd: run.subagentCostUsd,
            inputTokens: run.subagentInputTokens ?? 0,
            outputTokens: run.subagentOutputTokens ?? 0,
          },
        }
      : {}),
    ...(run.error !== undefined ? { error: run.error } : {}),
  };
}
