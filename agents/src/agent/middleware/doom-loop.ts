import type { StoredMessage } from '../agent-state';
import type { AgentMiddleware } from './middleware';
import type { MiddlewareConfig } from './middleware-config';
import { callSignature, conversationCalls, isErrorResult } from './conversation-calls';

type DoomLoopConfig = Extract<MiddlewareConfig, { use: 'doom_loop' }>;
type AssistantMessage = Extract<StoredMessage, { role: 'assistant' }>;

/** Word trigrams of a text, case and punctuation aside (its words when it has fewer than three). */
function shingles(text: string): Set<string> {
  const words = text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s]+/gu, ' ')
    .split(/\s+/)
    .filter(Boolean);
  if (words.length < 3) return new Set([words.join(' ')]);
  const out = new Set<string>();
  for (let i = 0; i + 2 < words.length; i++) out.add(`${words[i]} ${words[i + 1]} ${words[i + 2]}`);
  return out;
}

/** Jaccard similarity of two texts' word trigrams, in [0, 1]. */
export function replySimilarity(a: string, b: string): number {
  if (a === b) return 1;
  const x = shingles(a);
  const y = shingles(b);
  let common = 0;
  for (const s of x) if (y.has(s)) common++;
  const union = x.size + y.size - common;
  return union === 0 ? 1 : common / union;
}

/**
 * The doom-loop detector ({@link DoomLoopConfigSchema}). It counts from the conversation, so
 * what it knows survives restarts and compaction resets it: a streak is the same failing call
 * (tool name and canonical arguments) made consecutively, or consecutive replies whose text is at
 * least `similarity` alike. Repeating a call that succeeds (polling a job, say) is not a loop; a
 * reply without text breaks a text streak. It acts when a streak reaches `repeats` (and again at
 * each multiple).
 */
export function doomLoop(config: DoomLoopConfig): AgentMiddleware {
  const act = (what: string, n: number) => {
    const hint =
      config.hint ??
      `You have ${what} ${n} times in a row without progress. Stop repeating it: reread the last result, then try a different approach.`;
    return config.action === 'stop' ? { stop: `doom loop: ${what} ${n} times in a row` } : { hint };
  };
  return {
    name: 'doom_loop',
    afterTool(ctx, call, outcome) {
      if (outcome.ok && !isErrorResult(outcome.content)) return undefined;
      const signature = callSignature(call);
      const calls = conversationCalls(ctx.session.messages);
      // The current call is in the conversation without its result; count back from it.
      const at = calls.findIndex((c) => c.call.id === call.id);
      let streak = 1;
      for (let i = (at < 0 ? calls.length : at) - 1; i >= 0; i--) {
        const c = calls[i]!;
        const failed = c.result !== undefined && isErrorResult(c.result);
        if (!failed || callSignature(c.call) !== signature) break;
        streak++;
      }
      if (streak < config.repeats || streak % config.repeats !== 0) return undefined;
      return act(`made the same failing call ${call.name}`, streak);
    },
    afterModel(ctx, reply) {
      const text = reply.content?.trim();
      if (!text) return undefined;
      const replies = ctx.session.messages.filter(
        (m): m is AssistantMessage => m.role === 'assistant',
      );
      // The reply is the conversation's last assistant message.
      let streak = 1;
      for (let i = replies.length - 2; i >= 0; i--) {
        const earlier = replies[i]!.content?.trim();
        if (!earlier || replySimilarity(earlier, text) < config.similarity) break;
        streak++;
      }
      if (streak < config.repeats || streak % config.repeats !== 0) return undefined;
      return act('given nearly the same reply', streak);
    },
  };
}
