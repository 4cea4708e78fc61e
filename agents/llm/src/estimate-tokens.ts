import type { ChatMessage, ToolDefinition } from './chat-message';

/** Estimates the tokens of a text. */
export type TokenEstimator = (text: string) => number;

/**
 * A cheap, deliberately generous token estimate: ASCII text at 4 characters a token (OpenAI's rule
 * of thumb for English and code), every other UTF-16 unit as a whole token (CJK runs about one
 * token a character; accented Latin is over-counted, which is the safe side for a budget).
 */
export function estimateTextTokens(text: string): number {
  let nonAscii = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 127) nonAscii++;
  return Math.ceil((text.length - nonAscii) / 4) + nonAscii;
}

// Chat formats wrap each message in a few tokens (role, separators) and prime the reply with a
// few more: OpenAI documents 3–4 per message and 3 for the reply.
const PER_MESSAGE_TOKENS = 4;
const PER_TOOL_CALL_TOKENS = 3;
const REPLY_PRIMING_TOKENS = 3;
// An image's tokens depend on its size and the provider; OpenAI charges 85 + 170 per 512-pixel
// tile at high detail, 765 for a 1024×1024 image. A screen-sized image is counted as that: the
// estimate reserves budget, and the provider's reported usage settles it.
const IMAGE_TOKENS = 765;

/**
 * Estimated prompt tokens of a request: the text of every message and tool call, per-message
 * framing, and the tool definitions (which providers render into the prompt).
 */
export function estimatePromptTokens(
  messages: readonly ChatMessage[],
  tools: readonly ToolDefinition[] | undefined,
  estimate: TokenEstimator = estimateTextTokens,
): number {
  let total = REPLY_PRIMING_TOKENS;
  for (const message of messages) {
    total += PER_MESSAGE_TOKENS;
    if (typeof message.content === 'string') total += estimate(message.content);
    else if (message.content !== null) {
      for (const part of message.content) {
        total += part.type === 'text' ? estimate(part.text) : IMAGE_TOKENS;
      }
    }
    if (message.role === 'assistant' && message.toolCalls !== undefined) {
      for (const call of message.toolCalls) {
        total += PER_TOOL_CALL_TOKENS + estimate(call.name) + estimate(call.argumentsText);
      }
    }
  }
  if (tools !== undefined && tools.length > 0) total += estimate(JSON.stringify(tools));
  return total;
}
