import type { TokenLogprob } from '@troupe/llm';
import type { StoredMessage } from './agent-state';
import { type TrajectoryEvent, TrajectoryEventType } from './trajectory-event';
import { latestPerSeq } from './trajectory-store';

/** A message in OpenAI Chat Completions format. */
export type OpenAIChatMessage =
  | { role: 'system' | 'user'; content: string }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls?: {
        id: string;
        type: 'function';
        function: { name: string; arguments: string };
      }[];
    }
  | { role: 'tool'; tool_call_id: string; content: string };

/** One JSONL line: a session's full conversation (uncompacted) and where it came from. */
export interface TrajectoryJsonlRecord {
  messages: OpenAIChatMessage[];
  /** Tool definitions offered on the last run, OpenAI format. */
  tools?: unknown[];
  metadata: { sessionId: string; runs: { runId: string; stopReason?: string }[] };
  /**
   * Per-token log-probabilities of assistant messages, when the model calls asked for them
   * (template `sampling.logprobs`): `messageIndex` is the message's position in `messages`.
   * @default absent
   */
  logprobs?: { messageIndex: number; tokens: TokenLogprob[] }[];
}

/** A stored message in OpenAI wire format. */
export function toOpenAIMessage(m: StoredMessage): OpenAIChatMessage {
  switch (m.role) {
    case 'system':
    case 'user':
      return { role: m.role, content: m.content };
    case 'tool':
      return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
    case 'assistant':
      return {
        role: 'assistant',
        content: m.content,
        ...(m.toolCalls && m.toolCalls.length > 0
          ? {
              tool_calls: m.toolCalls.map((c) => ({
                id: c.id,
                type: 'function' as const,
                function: { name: c.name, arguments: c.argumentsText },
              })),
            }
          : {}),
      };
  }
}

/**
 * Rebuilds the full conversation of a session from its trajectory (compactions do not shorten
 * it: every message that ever entered the context is there once, in order).
 */
export function trajectoryToRecord(
  sessionId: string,
  events: readonly TrajectoryEvent[],
): TrajectoryJsonlRecord {
  const messages: OpenAIChatMessage[] = [];
  const runs: { runId: string; stopReason?: string }[] = [];
  let tools: unknown[] | undefined;
  const logprobs: { messageIndex: number; tokens: TokenLogprob[] }[] = [];
  for (const e of latestPerSeq(events)) {
    if (e.type === TrajectoryEventType.MODEL_CALL && Array.isArray(e.data['logprobs'])) {
      logprobs.push({
        messageIndex: messages.length,
        tokens: e.data['logprobs'] as TokenLogprob[],
      });
    }
    for (const m of e.messages ?? []) messages.push(toOpenAIMessage(m));
    if (e.type === TrajectoryEventType.RUN_START) {
      runs.push({ runId: e.runId });
      if (Array.isArray(e.data['tools'])) tools = e.data['tools'] as unknown[];
    }
    if (e.type === TrajectoryEventType.RUN_END) {
      const result = e.data['result'] as { stopReason?: string } | undefined;
      const run = runs.find((r) => r.runId === e.runId);
      if (run && result?.stopReason) run.stopReason = result.stopReason;
    }
  }
  return {
    messages,
    ...(tools ? { tools } : {}),
    metadata: { sessionId, runs },
    ...(logprobs.length > 0 ? { logprobs } : {}),
  };
}

/** JSONL text (one line per session) of the given sessions' trajectories. */
export function trajectoriesToJsonl(
  sessions: readonly { sessionId: string; events: readonly TrajectoryEvent[] }[],
): string {
  return sessions
    .map((s) => JSON.stringify(trajectoryToRecord(s.sessionId, s.events)) + '\n')
    .join('');
}
