/**
 * @packageDocumentation
 * @troupe/agents: LLM client, agent actor, tools, subagents, skills, evolution and RSI roles.
 * So far: the model registry and the LLM client (`LlmClient`) with its budget, rate-limit and
 * call-recording hooks.
 */
export type {
  BudgetAmount,
  BudgetHook,
  BudgetReservation,
  BudgetReserveContext,
} from './llm/budget-hook';
export type { CallRecorder, LlmCallRecord } from './llm/call-recorder';
export type {
  AssistantMessage,
  AssistantReply,
  ChatMessage,
  SystemMessage,
  ToolCall,
  ToolChoice,
  ToolDefinition,
  ToolMessage,
  UserMessage,
} from './llm/chat-message';
export type { ChatDelta, ChatOptions } from './llm/chat-options';
export { type ChatResult, FinishReason, type LlmUsage } from './llm/chat-result';
export { computeCostUsd } from './llm/compute-cost-usd';
export {
  estimatePromptTokens,
  estimateTextTokens,
  type TokenEstimator,
} from './llm/estimate-tokens';
export {
  InMemoryCallRecorder,
  type InMemoryCallRecorderOptions,
  type ModelCallTotals,
} from './llm/in-memory-call-recorder';
export { LlmClient, type LlmClientOptions } from './llm/llm-client';
export {
  type ModelConfig,
  ModelConfigSchema,
  type ModelOptions,
  MaxTokensParam,
} from './llm/model-config';
export {
  MODEL_NAME,
  ModelRegistry,
  type ModelRegistryConfig,
  type ModelRegistryOptions,
} from './llm/model-registry';
export type { RateLimitDecision, RateLimitHook, RateLimitRequest } from './llm/rate-limit-hook';
export {
  backoffDelayMs,
  resolveRetryConfig,
  type RetryConfig,
  type RetryOptions,
} from './llm/retry-options';
export {
  type ModelRateLimits,
  TokenBucketRateLimiter,
  type TokenBucketRateLimiterOptions,
} from './llm/token-bucket-rate-limiter';
