/**
 * @packageDocumentation
 * @troupe/llm: the model registry and the LLM client (`LlmClient`, openai SDK) with its budget,
 * rate-limit and call-recording hooks. Exports what the other packages use; the package's own
 * tests import the rest by path.
 */
export type {
  BudgetAmount,
  BudgetHook,
  BudgetReservation,
  BudgetReserveContext,
} from './budget-hook';
export type {
  ChatMessage,
  ImagePart,
  TextPart,
  ToolCall,
  ToolDefinition,
  UserContentPart,
} from './chat-message';
export { InMemoryCallRecorder } from './in-memory-call-recorder';
export { LlmClient } from './llm-client';
export { MODEL_NAME, ModelRegistry } from './model-registry';
export { endpointModelConfig, type ModelEndpoint } from './model-endpoint';
export type { TokenLogprob } from './chat-result';
