import type { BudgetHook, ChatMessage, LlmClient, ToolDefinition } from '@troupe/llm';
import type { AgentSessionState, RunningSession, StoredMessage } from './agent-state';
import { heldToolDefinitions } from './agent-tool-args';
import type { Checkpointer } from './checkpointer';
import { TrajectoryEventType } from './trajectory-event';

/** What one model call of a run needs (from its agent turn). */
export interface ModelStepOptions {
  llm: Pick<LlmClient, 'chat'>;
  sessionId: string;
  checkpointer: Pick<Checkpointer<AgentSessionState>, 'emit'>;
  /** The turn's signal, also aborted when it takes a `cancel` of its run. */
  signal: AbortSignal;
  /** The run's budget (its own cap, then the injected ledger). */
  budget: BudgetHook;
  /** Wall time the run has used so far (its `limits.maxWallMs` bounds the call). */
  elapsedMs: number;
  /** The messages to send instead of the conversation (a middleware's rewrite of this call). */
  messages?: ChatMessage[];
  /** Tools offered besides the template's own (the session's MCP tools). @default none */
  extraTools?: ToolDefinition[];
}

/**
 * One step: calls the model on the session's conversation with the tools it holds, counts the
 * step with its usage and cost, and appends the reply to the conversation, recording it as a
 * `model_call` event that leaves with the next commit. Returns the reply.
 */
export async function modelStep(
  s: RunningSession,
  o: ModelStepOptions,
): Promise<Extract<StoredMessage, { role: 'assistant' }>> {
  const { run, template } = s;
  const { maxWallMs } = template.limits;
  const sampling = template.sampling;
  const result = await o.llm.chat({
    model: template.model,
    ...(template.endpoint ? { endpoint: template.endpoint } : {}),
    ...(sampling?.temperature !== undefined ? { temperature: sampling.temperature } : {}),
    ...(sampling?.topP !== undefined ? { topP: sampling.topP } : {}),
    ...(sampling?.seed !== undefined ? { seed: sampling.seed } : {}),
    ...(sampling?.logprobs ? { logprobs: true } : {}),
    ...(sampling?.logprobs && sampling.topLogprobs !== undefined
      ? { topLogprobs: sampling.topLogprobs }
      : {}),
    messages: o.messages ?? s.messages.map(toChat),
    tools: [...heldToolDefinitions(template), ...(o.extraTools ?? [])],
    ...(template.maxTokensPerCall ? { maxTokens: template.maxTokensPerCall } : {}),
    signal: o.signal,
    budget: o.budget,
    requestId: `${o.sessionId}.${run.runId}.${run.steps + 1}`.slice(0, 200),
    metadata: {
      session: o.sessionId,
      run: run.runId,
      step: run.steps + 1,
      ...(run.budgetScope ? { budgetScope: run.budgetScope } : {}),
    },
    ...(maxWallMs !== undefined ? { totalTimeoutMs: maxWallMs - o.elapsedMs } : {}),
  });
  run.steps++;
  run.inputTokens += result.usage.promptTokens;
  run.outputTokens += result.usage.completionTokens;
  run.costUsd += result.costUsd;
  const reply: StoredMessage = {
    role: 'assistant',
    content: result.message.content,
    ...(result.message.toolCalls.length > 0 ? { toolCalls: result.message.toolCalls } : {}),
  };
  s.messages.push(reply);
  o.checkpointer.emit(
    run.runId,
    TrajectoryEventType.MODEL_CALL,
    [reply],
    {
      model: result.model,
      requestId: result.requestId,
      usage: result.usage,
      costUsd: result.costUsd,
      latencyMs: result.latencyMs,
      attempts: result.attempts,
      finishReason: result.finishReason,
      ...(result.logprobs ? { logprobs: result.logprobs } : {}),
    },
    { defer: true },
  );
  return reply;
}

/** A stored message as the LLM client takes it (the `pinned` mark stays behind). */
export function toChat(m: StoredMessage): ChatMessage {
  switch (m.role) {
    case 'assistant':
      return {
        role: 'assistant',
        content: m.content,
        ...(m.toolCalls ? { toolCalls: m.toolCalls } : {}),
      };
    case 'tool':
      return { role: 'tool', toolCallId: m.toolCallId, content: m.content };
    default:
      return { role: m.role, content: m.content };
  }
}
