import type { BudgetHook } from './budget-hook';
import type { ChatMessage, ToolChoice, ToolDefinition } from './chat-message';
import type { ModelEndpoint } from './model-endpoint';

/**
 * A piece of a streamed completion, for progress display. Pieces of a failed attempt are
 * superseded by the next attempt's, which start again from the beginning with a higher `attempt`.
 */
export type ChatDelta =
  | {
      /** Discriminant. */
      kind: 'content';
      /** Text appended to the content. */
      text: string;
      /** Attempt the piece belongs to, from 1. */
      attempt: number;
    }
  | {
      /** Discriminant. */
      kind: 'tool_call';
      /** Position of the tool call in the reply. */
      index: number;
      /** Tool call id, on the piece that first carries it. */
      id?: string;
      /** Function name, on the piece that first carries it. */
      name?: string;
      /** Text appended to the call's arguments (may be empty). */
      argumentsText: string;
      /** Attempt the piece belongs to, from 1. */
      attempt: number;
    };

/** Options of {@link LlmClient.chat}. */
export interface ChatOptions {
  /** Registry name of the model. */
  model: string;
  /** The conversation, oldest first; at least one message. */
  messages: readonly ChatMessage[];
  /** Functions the model may call. @default none */
  tools?: readonly ToolDefinition[];
  /** Whether/which tool must be called. @default provider default ('auto' when tools are given) */
  toolChoice?: ToolChoice;
  /** Completion cap; also what is reserved as the worst case. @default the model's `maxTokens` */
  maxTokens?: number;
  /** Sampling temperature, 0–2. @default provider default */
  temperature?: number;
  /** Nucleus sampling mass, 0–1 (`top_p`). @default provider default */
  topP?: number;
  /** Sampling seed (`seed`), for servers that honour it. @default none */
  seed?: number;
  /** Ask for per-token log-probabilities of the reply (`logprobs: true`). @default false */
  logprobs?: boolean;
  /** Alternatives per token with their log-probabilities, 0–20 (`top_logprobs`). @default none */
  topLogprobs?: number;
  /**
   * Send the call to this endpoint instead of the registry's entry for `model` (which then only
   * names the call in records and budgets): no key, prices 0. See {@link ModelEndpoint}.
   * @default the registry's model
   */
  endpoint?: ModelEndpoint;
  /** Stream the reply (reassembled before returning; see `onDelta`). @default false */
  stream?: boolean;
  /** Called with each streamed piece; its errors are logged and ignored. @default none */
  onDelta?: (delta: ChatDelta) => void;
  /**
   * Cancels the call: an abort ends it at once with `CANCELLED` (or `TIMEOUT` when the reason is
   * a timeout), with no further attempt. Required so no model call is ever uncancellable.
   */
  signal: AbortSignal;
  /**
   * Deadline of the whole call (queueing, rate-limit waits, attempts, backoff); past it the call
   * fails with `TIMEOUT`, and a retry that could not start before it is not waited for.
   * @default no deadline beyond `signal`
   */
  totalTimeoutMs?: number;
  /** The budget to reserve against. @default the client's `budget`, else none */
  budget?: BudgetHook;
  /** Facts passed to the budget and the call record (agent, job, session). @default none */
  metadata?: Readonly<Record<string, string | number | boolean>>;
  /** Id of the call (e.g. a trajectory step id). @default `llm_<uuid>` */
  requestId?: string;
}
