import { z } from 'zod';
import { AgentNameSchema } from '../agent-template';
import { AgentToolName } from '../agent-tool-name';
import { defineTool } from './agent-tool';

/**
 * `call_subagent`: runs a subagent on a request, sync (waits for its result) or async (its result
 * is posted to the caller's inbox); see {@link SubagentCalls.call}.
 */
export const callSubagent = defineTool({
  name: AgentToolName.CALL_SUBAGENT,
  description:
    'Give a subagent a request. sync waits for its final answer; async returns at once and its result arrives later as a message.',
  schema: z.strictObject({
    target: AgentNameSchema,
    request: z.string().min(1),
    mode: z.enum(['sync', 'async']).default('sync'),
    use_parent_history: z.boolean().default(false),
  }),
  effect: true,
  sandbox: false,
  run: (ctx, a) =>
    ctx.subagents.call(
      {
        target: a.target,
        request: a.request,
        mode: a.mode,
        useParentHistory: a.use_parent_history,
      },
      { callId: ctx.callId, assistantIndex: ctx.assistantIndex },
    ),
});
