import { isBudgetExhausted } from '@troupe/proto';
import type { BudgetHook, LlmClient } from '@troupe/llm';
import { type ChatFunction } from './llm-operator';

/** What a caller passes to {@link llmChatFunction}. */
export interface LlmChatFunctionOptions {
  /** The client (registry, retries, rate limits, call records). */
  client: Pick<LlmClient, 'chat'>;
  /** Registry name of the model (the job spec's `agent.model`). */
  model: string;
  /** Max completion tokens per call. @default the model's */
  maxTokens?: number;
  /** Sampling temperature. @default the model's */
  temperature?: number;
  /** Budget of the calls (the job's ledger scope). @default the client's */
  budget?: BudgetHook;
  /** Metadata of every call record (job, task). @default none */
  metadata?: Readonly<Record<string, string | number | boolean>>;
  /**
   * Called once when a call is refused for budget (`BUDGET_EXHAUSTED`): the search should stop
   * and go to final selection rather than record operator failures. @default nothing
   */
  onBudgetExhausted?: (err: unknown) => void;
}

/**
 * The {@link ChatFunction} of the LLM operators over an {@link LlmClient}: one chat completion
 * per operator call, the reply's text and the call's cost (`result.costUsd`, counted against the
 * search's `maxCostUsd`). Errors are passed on (the operator records a `no_code` node); a budget
 * refusal also calls `onBudgetExhausted`.
 */
export function llmChatFunction(options: LlmChatFunctionOptions): ChatFunction {
  let exhausted = false;
  return async (messages, { signal }) => {
    try {
      const result = await options.client.chat({
        model: options.model,
        messages: messages.map((m) => ({ role: m.role, content: m.content })),
        signal,
        ...(options.maxTokens !== undefined ? { maxTokens: options.maxTokens } : {}),
        ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
        ...(options.budget ? { budget: options.budget } : {}),
        ...(options.metadata ? { metadata: options.metadata } : {}),
      });
      return { text: result.message.content ?? '', costUsd: result.costUsd };
    } catch (err) {
      if (isBudgetExhausted(err) && !exhausted) {
        exhausted = true;
        options.onBudgetExhausted?.(err);
      }
      throw err;
    }
  };
}
