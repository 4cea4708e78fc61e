import type { ChatMessage } from '@troupe/llm';
import type { StoredMessage } from './agent-state';

/** Characters of a conversation, as compaction counts them (content and tool-call arguments). */
export function conversationChars(messages: readonly StoredMessage[]): number {
  let n = 0;
  for (const m of messages) {
    n += m.content?.length ?? 0;
    if (m.role === 'assistant') {
      for (const c of m.toolCalls ?? []) n += c.name.length + c.argumentsText.length;
    }
  }
  return n;
}

/** The older part of a conversation that compaction replaces: `messages[start, end)`. */
export interface CompactionWindow {
  start: number;
  end: number;
}

/**
 * Picks the window to summarise: after the leading system message(s), up to the latest cut that
 * leaves at least `keepRecentChars` verbatim. A cut is only made before a user or assistant
 * message — never between an assistant's tool calls and their results — so both sides stay
 * balanced. Undefined when no window of at least two messages exists.
 */
export function findCompactionWindow(
  messages: readonly StoredMessage[],
  keepRecentChars: number,
): CompactionWindow | undefined {
  let start = 0;
  while (start < messages.length && messages[start]?.role === 'system') start++;
  let end: number | undefined;
  let tail = 0;
  for (let i = messages.length - 1; i > start; i--) {
    const m = messages[i];
    if (!m) continue;
    tail += conversationChars([m]);
    if (tail >= keepRecentChars && m.role !== 'tool') {
      end = i;
      break;
    }
  }
  if (end === undefined || end - start < 2) return undefined;
  return { start, end };
}

/** The summariser's prompt for a window. */
export function summaryPrompt(window: readonly StoredMessage[]): ChatMessage[] {
  const lines = window.map((m) => {
    if (m.role === 'assistant') {
      const calls = (m.toolCalls ?? []).map((c) => `  -> ${c.name}(${c.argumentsText})`);
      return [`assistant: ${m.content ?? ''}`, ...calls].join('\n');
    }
    if (m.role === 'tool') return `tool result: ${m.content}`;
    return `${m.role}: ${m.content}`;
  });
  return [
    {
      role: 'system',
      content:
        'You compress an agent transcript. Write a concise summary that keeps every fact the agent still needs: decisions, file paths, commands and their outcomes, errors, open questions. Do not invent anything.',
    },
    { role: 'user', content: lines.join('\n\n') },
  ];
}

/**
 * The conversation after compaction: the prefix, the window's pinned messages verbatim, one user
 * message carrying the summary, then the recent messages.
 */
export function applyCompaction(
  messages: readonly StoredMessage[],
  window: CompactionWindow,
  summary: string,
): StoredMessage[] {
  const inside = messages.slice(window.start, window.end);
  const pinned = inside.filter(
    (m) => m.pinned === true && m.role !== 'tool' && m.role !== 'assistant',
  );
  return [
    ...messages.slice(0, window.start),
    ...pinned,
    {
      role: 'user',
      content: `[Summary of ${inside.length - pinned.length} earlier messages]\n${summary}`,
    },
    ...messages.slice(window.end),
  ];
}
