import { headTail } from '../replace-exact';
import type { AgentMiddleware } from './middleware';
import type { MiddlewareConfig } from './middleware-config';
import { isErrorResult } from './conversation-calls';

type SummariseConfig = Extract<MiddlewareConfig, { use: 'summarise_tool_output' }>;

/** Characters of a tool output the summariser reads at most (head and tail). */
const MAX_INPUT_CHARS = 200_000;

const INSTRUCTION =
  'You summarise the output of a tool call for an agent that cannot see it. Keep what the agent needs to decide its next step: errors and their messages, failing test names, file paths, line numbers, counts, versions, and the final lines. Do not invent anything. Answer with the summary only.';

/**
 * `summarise_tool_output`: a successful tool result longer than `aboveChars` reaches the model as
 * a summary by `model` (charged to the run), headed by a note that it is one; the `tool_result`
 * event keeps the full text (`data.fullContent`). Errors pass unchanged.
 */
export function summariseToolOutput(config: SummariseConfig): AgentMiddleware {
  return {
    name: 'summarise_tool_output',
    async afterTool(ctx, call, outcome) {
      if (!outcome.ok || isErrorResult(outcome.content)) return undefined;
      if (outcome.content.length <= config.aboveChars) return undefined;
      const summary = await ctx.chat({
        model: config.model,
        messages: [
          { role: 'system', content: INSTRUCTION },
          {
            role: 'user',
            content: `Output of ${call.name}(${call.argumentsText.slice(0, 2_000)}), ${outcome.content.length} characters:\n\n${headTail(outcome.content, MAX_INPUT_CHARS)}`,
          },
        ],
        maxTokens: config.maxSummaryTokens,
        purpose: 'tool_output_summary',
      });
      return {
        content: `[${outcome.content.length} characters of output, summarised; the full text is in the trajectory]\n${summary}`,
      };
    },
  };
}
