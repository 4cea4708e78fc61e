import type { AssistantReply } from './chat-message';

/** Why the model stopped, as providers report it; other strings pass through unchanged. */
export const FinishReason = {
  /** Natural end or a stop sequence. */
  STOP: 'stop',
  /** The completion cap (`maxTokens`) or the context window was reached. */
  LENGTH: 'length',
  /** The model called tools. */
  TOOL_CALLS: 'tool_calls',
  /** Output withheld by the provider's filter. */
  CONTENT_FILTER: 'content_filter',
} as const;

/**
 * One of the {@link FinishReason} values or whatever else a server sent (the
 * `Record<never, never>` intersection keeps editor completion for the known ones).
 */
export type FinishReason =
  (typeof FinishReason)[keyof typeof FinishReason] | (string & Record<never, never>);

/** Token counts of one completion. */
export interface LlmUsage {
  /** Tokens in the prompt (messages, tool definitions). */
  promptTokens: number;
  /** Tokens generated. */
  completionTokens: number;
  /** promptTokens + completionTokens, unless the provider says otherwise. */
  totalTokens: number;
}

/** One sampled token with its log-probability (OpenAI `choices[].logprobs.content[]`). */
export interface TokenLogprob {
  /** The token as text. */
  token: string;
  /** Natural log of its probability under the policy. */
  logprob: number;
  /** The token's UTF-8 bytes, when the server sends them. */
  bytes?: number[];
  /** The most likely alternatives at this position, when `topLogprobs` was asked for. */
  topLogprobs?: { token: string; logprob: number }[];
}

/** What {@link LlmClient.chat} returns. */
export interface ChatResult {
  /** The assistant turn; append it to the conversation as is. */
  message: AssistantReply;
  /** Why generation stopped. */
  finishReason: FinishReason;
  /** Token counts: the provider's, or estimated when it sent none (see `usageEstimated`). */
  usage: LlmUsage;
  /** Whether `usage` is an estimate because the provider reported none. */
  usageEstimated: boolean;
  /** usage × the model's prices, in USD. */
  costUsd: number;
  /** Wall time of the whole call: queueing, attempts and backoff included. */
  latencyMs: number;
  /** Requests sent, the successful one included. */
  attempts: number;
  /** Registry name of the model. */
  model: string;
  /** Model id the provider reported (may differ from the configured id, e.g. a dated snapshot). */
  providerModel: string;
  /** Id of this call, shared by its attempts, the budget reservation and the call record. */
  requestId: string;
  /** The provider's `x-request-id`, for support tickets. @default absent when not sent */
  providerRequestId?: string;
  /**
   * Per-token log-probabilities of the reply's content, when the call asked for `logprobs` and
   * the server returned them (non-streamed calls only). @default absent
   */
  logprobs?: TokenLogprob[];
}
