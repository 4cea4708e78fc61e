import { z } from 'zod';
import { AgentToolName } from '../agent-tool-name';
import { defineTool } from './agent-tool';

/** `list_agents`: the session's subagents, its parent and its siblings. */
export const listAgents = defineTool({
  name: AgentToolName.LIST_AGENTS,
  description:
    'List your subagents, their tools and sandboxes and whether they are busy, your parent and your siblings.',
  schema: z.strictObject({}),
  effect: false,
  sandbox: false,
  run({ session: s }) {
    const rows = Object.values(s.subagents).map(
      (a) =>
        `- ${a.name} (session ${a.sessionId}, model ${a.model}, tools [${a.tools.join(', ')}]${a.sandboxes ? `, sandboxes [${a.sandboxes.join(', ')}]` : ''})${a.activeCallId ? ' BUSY' : ''}`,
    );
    const parent = s.parentSessionId ? `parent: ${s.parentSessionId}\n` : '';
    const siblings = s.siblings?.length ? `siblings: ${s.siblings.join(', ')}\n` : '';
    return { ok: true, content: `${parent}${siblings}subagents:\n${rows.join('\n') || '(none)'}` };
  },
});
