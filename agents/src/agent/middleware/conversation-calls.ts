import type { ToolCall } from '@troupe/llm';
import type { StoredMessage } from '../agent-state';

/** A tool call of the conversation with its result (undefined while it has none). */
export interface AnsweredCall {
  call: ToolCall;
  result: string | undefined;
}

/** Every tool call of a conversation in order, each with its result's text. */
export function conversationCalls(messages: readonly StoredMessage[]): AnsweredCall[] {
  const results = new Map<string, string>();
  for (const m of messages) if (m.role === 'tool') results.set(m.toolCallId, m.content);
  const out: AnsweredCall[] = [];
  for (const m of messages) {
    if (m.role !== 'assistant') continue;
    for (const call of m.toolCalls ?? []) out.push({ call, result: results.get(call.id) });
  }
  return out;
}

/** Whether a tool result is an error (tools answer failures with `error: …`). */
export function isErrorResult(content: string): boolean {
  return content.startsWith('error:');
}

/** The arguments as canonical text: parsed JSON re-serialised with sorted keys, else trimmed. */
export function canonicalArguments(argumentsText: string): string {
  try {
    return JSON.stringify(sortKeys(JSON.parse(argumentsText)));
  } catch {
    return argumentsText.trim();
  }
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') {
    return Object.fromEntries(
      Object.entries(v as Record<string, unknown>)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, x]) => [k, sortKeys(x)]),
    );
  }
  return v;
}

/** A call's identity for repeat detection: its name and canonical arguments. */
export function callSignature(call: Pick<ToolCall, 'name' | 'argumentsText'>): string {
  return `${call.name}(${canonicalArguments(call.argumentsText)})`;
}
