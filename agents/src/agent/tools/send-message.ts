import { z } from 'zod';
import { AGENT_KIND } from '../agent-messages';
import { AgentToolName } from '../agent-tool-name';
import { defineTool } from './agent-tool';
import { toolError } from './tool-outcome';

/** `send_message`: posts a text to a subagent, a sibling or the parent. */
export const sendMessage = defineTool({
  name: AgentToolName.SEND_MESSAGE,
  description: 'Send a text message to a subagent, a sibling or your parent.',
  schema: z.strictObject({
    to: z
      .string()
      .min(1)
      .describe('a subagent name, a sibling (another subagent of your parent) name, or "parent"'),
    text: z.string().min(1),
  }),
  effect: true,
  sandbox: false,
  async run({ session: s, sessionId, refs, callId, signal }, a) {
    const { parentSessionId, siblings = [] } = s;
    const target =
      a.to === 'parent'
        ? parentSessionId
        : (s.subagents[a.to]?.sessionId ??
          (parentSessionId && siblings.includes(a.to) ? `${parentSessionId}__${a.to}` : undefined));
    if (!target) {
      const known = [
        ...(parentSessionId ? ['parent'] : []),
        ...Object.keys(s.subagents),
        ...(parentSessionId ? siblings : []),
      ];
      return toolError(
        `\`arguments.to\`: no agent '${a.to}' (known: ${known.join(', ') || 'none'})`,
      );
    }
    await refs
      .refOf({ kind: AGENT_KIND, id: target })
      .post(
        'message',
        { from: sessionId, text: a.text },
        { dedupeId: `msg:${sessionId}:${callId}`, signal },
      );
    return { ok: true, content: `message sent to ${a.to}` };
  },
});
