import type { ChatCompletionCreateParams } from 'openai/resources/chat/completions';
import type { IncomingHttpHeaders } from 'node:http';

/** A tool call the fake model makes. */
export interface FakeToolCall {
  /** Function name. */
  name: string;
  /** Arguments: a string is sent verbatim (it may be invalid JSON on purpose), anything else is JSON-encoded. */
  arguments: string | Record<string, unknown> | unknown[];
  /** Tool call id. @default `call_<n>`, counting up per FakeOpenAI instance */
  id?: string;
}

/** Token counts, as on the wire; fields left out are estimated (about 4 characters a token). */
export interface FakeUsage {
  /** Tokens in the request's messages. @default ceil(characters of the messages / 4) */
  prompt_tokens?: number;
  /** Tokens in the reply. @default ceil(characters of content and tool calls / 4) */
  completion_tokens?: number;
  /** @default prompt_tokens + completion_tokens */
  total_tokens?: number;
}

/** Why the fake model stopped, as on the wire. */
export type FakeFinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter';

/** A token of a scripted reply with its log-probability (sent as `choices[0].logprobs`). */
export interface FakeTokenLogprob {
  /** The token text. */
  token: string;
  /** Its log-probability. */
  logprob: number;
  /** Alternatives at this position. @default [] */
  topLogprobs?: { token: string; logprob: number }[];
}

/** A successful chat completion: assistant content and/or tool calls. */
export interface FakeCompletion {
  /** Assistant text. @default null */
  content?: string | null;
  /** Tool calls; in a stream their arguments arrive in pieces. @default none */
  toolCalls?: FakeToolCall[];
  /** Token counts. @default estimated from characters */
  usage?: FakeUsage;
  /** @default 'tool_calls' when there are tool calls, otherwise 'stop' */
  finishReason?: FakeFinishReason;
  /** Model name in the reply. @default the request's `model` */
  model?: string;
  /**
   * Non-streamed replies only: per-token log-probabilities sent as
   * `choices[0].logprobs.content` (bytes filled in from the token text). @default null, as before
   */
  logprobs?: FakeTokenLogprob[];
  /** Wait this long before sending the response headers. @default 0 */
  delayMs?: number;
  /** Streaming only: characters per content or arguments piece. @default the server's `streamChunkChars` */
  chunkChars?: number;
  /** Streaming only: pause between two chunks, e.g. to cancel mid-stream. @default 0 */
  chunkDelayMs?: number;
}

/**
 * A plain HTTP response, usually a fault: `{ status: 429, retryAfterS: 1 }`, `{ status: 500 }`.
 * Statuses >= 400 get an OpenAI-shaped error body unless `body` is given.
 */
export interface FakeStatusResponse {
  /** HTTP status code. */
  status: number;
  /** Sets the `retry-after` header (seconds). @default not sent */
  retryAfterS?: number;
  /** Sets the `retry-after-ms` header, which the openai SDK prefers. @default not sent */
  retryAfterMs?: number;
  /** Response body: a string is sent verbatim, anything else as JSON. @default an OpenAI error object */
  body?: unknown;
  /** Extra response headers (for example `x-should-retry`). @default none */
  headers?: Record<string, string>;
  /** Wait this long before responding. @default 0 */
  delayMs?: number;
}

/** HTTP 200 with a body that is not valid JSON (in a stream: an SSE event whose data is not JSON). */
export interface FakeMalformedResponse {
  /** Marks the fault. */
  malformed: true;
  /** Wait this long before responding. @default 0 */
  delayMs?: number;
}

/** Destroys the connection without sending a response, like a crashed proxy. */
export interface FakeDisconnect {
  /** Marks the fault. */
  disconnect: true;
  /** Wait this long before hanging up. @default 0 */
  delayMs?: number;
}

/** One scripted reply of {@link FakeOpenAI}. */
export type ScriptedResponse =
  FakeCompletion | FakeStatusResponse | FakeMalformedResponse | FakeDisconnect;

/** A request as the fake server received it. */
export interface RecordedRequest {
  /** Position in `FakeOpenAI.requests`, from 0. */
  index: number;
  /** HTTP method. */
  method: string;
  /** Path without the query string, e.g. `/v1/chat/completions`. */
  path: string;
  /** Request headers (lowercase names). */
  headers: IncomingHttpHeaders;
  /** The parsed JSON body, or undefined when there was no body or it was not JSON. */
  body: unknown;
  /** The raw body text. */
  rawBody: string;
  /** `Date.now()` when the request arrived. */
  receivedAtMs: number;
}

/** A chat completion request, with its body parsed and checked for `model` and `messages`. */
export interface ChatRequest extends RecordedRequest {
  /** The request body. */
  body: ChatCompletionCreateParams;
}

/**
 * Decides the reply to a chat request once the queue is empty. Returning undefined means "no
 * reply scripted": the request fails loudly like an exhausted script.
 */
export type FakeOpenAIHandler = (
  request: ChatRequest,
) => ScriptedResponse | undefined | Promise<ScriptedResponse | undefined>;

/** A request the script did not expect, and why. */
export interface UnexpectedRequest {
  /** The request. */
  request: RecordedRequest;
  /** What was wrong: script exhausted, unknown route, invalid body, handler error. */
  reason: string;
}
