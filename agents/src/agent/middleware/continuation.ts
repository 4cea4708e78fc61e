import type { StoredMessage } from '../agent-state';
import type { MiddlewareContext } from './middleware';
import type { ContinuationConfig } from './middleware-config';

/** The continue prompt when the template sets no continuation policy. */
export const DEFAULT_CONTINUE_PROMPT =
  'Continue working on the task. When it is done, call finish_task with a summary.';

/** Characters of recent conversation the fake user reads. */
const FAKE_USER_CONTEXT_CHARS = 24_000;

/** The recent conversation as text, newest last, at most `maxChars`. */
function transcript(messages: readonly StoredMessage[], maxChars: number): string {
  const lines: string[] = [];
  let used = 0;
  for (let i = messages.length - 1; i >= 0 && used < maxChars; i--) {
    const m = messages[i]!;
    let line: string;
    if (m.role === 'assistant') {
      const calls = (m.toolCalls ?? []).map((c) => ` -> ${c.name}(${c.argumentsText})`);
      line = [`assistant: ${m.content ?? ''}`, ...calls].join('\n');
    } else if (m.role === 'tool') line = `tool result: ${m.content}`;
    else line = `${m.role}: ${m.content}`;
    line = line.slice(0, maxChars - used);
    used += line.length;
    lines.push(line);
  }
  return lines.reverse().join('\n\n');
}

/**
 * The user message that answers a reply without a tool call: the policy's fixed text, the
 * default prompt, or what the fake-user model writes after reading the instruction and the
 * recent conversation (the default prompt if it writes nothing).
 */
export async function continuationPrompt(
  policy: ContinuationConfig | undefined,
  messages: readonly StoredMessage[],
  ctx: Pick<MiddlewareContext, 'chat'>,
): Promise<string> {
  if (!policy) return DEFAULT_CONTINUE_PROMPT;
  if (policy.kind === 'fixed') return policy.text;
  const text = await ctx.chat({
    model: policy.model,
    messages: [
      { role: 'system', content: policy.instruction },
      {
        role: 'user',
        content: `The agent's conversation so far:\n\n${transcript(messages, FAKE_USER_CONTEXT_CHARS)}\n\nWrite the user's next message to the agent.`,
      },
    ],
    purpose: 'fake_user',
  });
  return text.trim() || DEFAULT_CONTINUE_PROMPT;
}
