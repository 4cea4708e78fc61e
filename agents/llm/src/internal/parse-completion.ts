import { z } from 'zod';
import type { ToolCall } from '../chat-message';
import type { LlmUsage, TokenLogprob } from '../chat-result';
import { MalformedResponseError } from './malformed-response-error';

/** A completion reduced to what the client returns. */
export interface ParsedCompletion {
  content: string | null;
  toolCalls: ToolCall[];
  finishReason: string;
  usage: LlmUsage | undefined;
  providerModel: string | undefined;
  /** Per-token log-probabilities of the content, when the server sent them. */
  logprobs?: TokenLogprob[];
}

// Lenient on purpose: OpenAI-compatible servers add fields and leave optional ones out; only what
// the client needs is checked.
const UsageSchema = z.object({
  prompt_tokens: z.number().min(0),
  completion_tokens: z.number().min(0),
  total_tokens: z.number().min(0).nullish(),
});

const CompletionSchema = z.object({
  model: z.string().nullish(),
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          tool_calls: z
            .array(
              z.object({
                id: z.string().nullish(),
                function: z.object({ name: z.string(), arguments: z.unknown() }),
              }),
            )
            .nullish(),
        }),
        finish_reason: z.string().nullish(),
        // Checked separately (toLogprobs): a server's odd logprobs never fail a completion.
        logprobs: z.unknown().optional(),
      }),
    )
    .min(1),
  usage: UsageSchema.nullish(),
});

const LogprobsSchema = z.object({
  content: z
    .array(
      z.object({
        token: z.string(),
        logprob: z.number(),
        bytes: z.array(z.number()).nullish(),
        top_logprobs: z
          .array(z.object({ token: z.string(), logprob: z.number() }).loose())
          .nullish(),
      }),
    )
    .nullish(),
});

/** Token log-probabilities in client form, or undefined when absent or not logprobs-shaped. */
export function toLogprobs(wire: unknown): TokenLogprob[] | undefined {
  const parsed = LogprobsSchema.safeParse(wire);
  if (!parsed.success || !parsed.data.content) return undefined;
  return parsed.data.content.map((t) => ({
    token: t.token,
    logprob: t.logprob,
    ...(t.bytes ? { bytes: t.bytes } : {}),
    ...(t.top_logprobs
      ? { topLogprobs: t.top_logprobs.map((a) => ({ token: a.token, logprob: a.logprob })) }
      : {}),
  }));
}

/** Usage in client form, or undefined when the wire value is absent or not usage-shaped. */
export function toUsage(wire: unknown): LlmUsage | undefined {
  const parsed = UsageSchema.safeParse(wire);
  if (!parsed.success) return undefined;
  const { prompt_tokens: promptTokens, completion_tokens: completionTokens } = parsed.data;
  return {
    promptTokens,
    completionTokens,
    totalTokens: parsed.data.total_tokens ?? promptTokens + completionTokens,
  };
}

/** Tool-call arguments as raw text; a server that sends an object gets it JSON-encoded. */
export function argumentsText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return '';
  return JSON.stringify(value);
}

/** Parses a non-streamed completion body; throws {@link MalformedResponseError}. */
export function parseCompletion(body: unknown, requestId: string): ParsedCompletion {
  const parsed = CompletionSchema.safeParse(body);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const where = first === undefined ? '' : ` at ${first.path.join('.') || '(root)'}`;
    throw new MalformedResponseError(
      typeof body === 'string'
        ? 'body is not JSON'
        : `body is not a chat completion${where}: ${first?.message ?? 'invalid'}`,
    );
  }
  const choice = parsed.data.choices[0]!;
  const logprobs = toLogprobs(choice.logprobs);
  return {
    ...(logprobs ? { logprobs } : {}),
    content: choice.message.content ?? null,
    toolCalls: (choice.message.tool_calls ?? []).map((call, index) => ({
      id: call.id ?? `call_${requestId}_${index}`,
      name: call.function.name,
      argumentsText: argumentsText(call.function.arguments),
    })),
    finishReason: choice.finish_reason ?? 'unknown',
    usage: toUsage(parsed.data.usage),
    providerModel: parsed.data.model ?? undefined,
  };
}
