import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParams,
  ChatCompletionMessageFunctionToolCall,
} from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';
import type {
  FakeCompletion,
  FakeFinishReason,
  FakeTokenLogprob,
  FakeUsage,
} from '../scripted-response';

/** A scripted completion with every default filled in. */
export interface ResolvedCompletion {
  id: string;
  created: number;
  model: string;
  content: string | null;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReason: FakeFinishReason;
  usage: CompletionUsage;
  logprobs?: FakeTokenLogprob[];
}

/** Rough token estimate used when a script leaves usage out: about four characters a token. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

function promptChars(body: ChatCompletionCreateParams): number {
  let chars = 0;
  for (const message of body.messages) {
    const content: unknown = message.content;
    if (typeof content === 'string') chars += content.length;
    else if (Array.isArray(content)) {
      for (const part of content as unknown[]) {
        if (part !== null && typeof part === 'object' && 'text' in part) {
          const text: unknown = part.text;
          if (typeof text === 'string') chars += text.length;
        }
      }
    }
    if ('tool_calls' in message && Array.isArray(message.tool_calls)) {
      for (const call of message.tool_calls) {
        if (call.type === 'function') {
          chars += call.function.name.length + call.function.arguments.length;
        }
      }
    }
  }
  return chars;
}

function resolveUsage(
  scripted: FakeUsage | undefined,
  body: ChatCompletionCreateParams,
  completionChars: number,
): CompletionUsage {
  const prompt = scripted?.prompt_tokens ?? Math.max(1, estimateTokens(promptChars(body)));
  const completion = scripted?.completion_tokens ?? estimateTokens(completionChars);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: scripted?.total_tokens ?? prompt + completion,
  };
}

/** Fills in ids, model, finish reason and usage for a scripted completion. */
export function resolveCompletion(
  scripted: FakeCompletion,
  body: ChatCompletionCreateParams,
  ids: { completionId: string; nextToolCallId: () => string },
): ResolvedCompletion {
  const toolCalls = (scripted.toolCalls ?? []).map((call) => ({
    id: call.id ?? ids.nextToolCallId(),
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
  }));
  const content = scripted.content ?? null;
  const completionChars =
    (content?.length ?? 0) +
    toolCalls.reduce((sum, call) => sum + call.name.length + call.arguments.length, 0);
  return {
    id: ids.completionId,
    created: Math.floor(Date.now() / 1000),
    model: scripted.model ?? body.model,
    content,
    toolCalls,
    finishReason: scripted.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
    usage: resolveUsage(scripted.usage, body, completionChars),
    ...(scripted.logprobs ? { logprobs: scripted.logprobs } : {}),
  };
}

function toWireToolCalls(c: ResolvedCompletion): ChatCompletionMessageFunctionToolCall[] {
  return c.toolCalls.map((call) => ({
    id: call.id,
    type: 'function',
    function: { name: call.name, arguments: call.arguments },
  }));
}

/** The non-streaming response body. */
export function completionBody(c: ResolvedCompletion): ChatCompletion {
  return {
    id: c.id,
    object: 'chat.completion',
    created: c.created,
    model: c.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: c.content,
          refusal: null,
          ...(c.toolCalls.length > 0 ? { tool_calls: toWireToolCalls(c) } : {}),
        },
        logprobs: c.logprobs
          ? {
              content: c.logprobs.map((t) => ({
                token: t.token,
                logprob: t.logprob,
                bytes: [...Buffer.from(t.token, 'utf8')],
                top_logprobs: (t.topLogprobs ?? []).map((a) => ({
                  token: a.token,
                  logprob: a.logprob,
                  bytes: [...Buffer.from(a.token, 'utf8')],
                })),
              })),
              refusal: null,
            }
          : null,
        finish_reason: c.finishReason,
      },
    ],
    usage: c.usage,
  };
}

function pieces(text: string, size: number): string[] {
  if (text.length === 0) return [];
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/**
 * The SSE chunks of a streamed completion, in the order OpenAI sends them: a role chunk,
 * content pieces, per tool call a header chunk (id, name) followed by argument pieces, a chunk
 * with the finish reason, and with `include_usage` a final chunk with empty `choices` and the
 * usage (every other chunk then carries `usage: null`).
 */
export function completionChunks(
  c: ResolvedCompletion,
  chunkChars: number,
  includeUsage: boolean,
): ChatCompletionChunk[] {
  const size = Math.max(1, Math.floor(chunkChars));
  const base = {
    id: c.id,
    object: 'chat.completion.chunk' as const,
    created: c.created,
    model: c.model,
  };
  const usageField = includeUsage ? { usage: null } : {};
  const chunk = (
    delta: ChatCompletionChunk.Choice.Delta,
    finishReason: FakeFinishReason | null = null,
  ): ChatCompletionChunk => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...usageField,
  });

  const chunks: ChatCompletionChunk[] = [
    chunk({ role: 'assistant', content: c.content === null ? null : '', refusal: null }),
  ];
  for (const piece of pieces(c.content ?? '', size)) chunks.push(chunk({ content: piece }));
  c.toolCalls.forEach((call, index) => {
    chunks.push(
      chunk({
        tool_calls: [
          { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } },
        ],
      }),
    );
    for (const piece of pieces(call.arguments, size)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  chunks.push(chunk({}, c.finishReason));
  if (includeUsage) chunks.push({ ...base, choices: [], usage: c.usage });
  return chunks;
}

/** An OpenAI-shaped error body. */
export function errorBody(
  status: number,
  message: string,
  type?: string,
  code?: string | null,
): { error: { message: string; type: string; param: null; code: string | null } } {
  return {
    error: {
      message,
      type: type ?? defaultErrorType(status),
      param: null,
      code: code ?? defaultErrorCode(status),
    },
  };
}

function defaultErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

function defaultErrorCode(status: number): string | null {
  if (status === 401) return 'invalid_api_key';
  if (status === 429) return 'rate_limit_exceeded';
  return null;
}
