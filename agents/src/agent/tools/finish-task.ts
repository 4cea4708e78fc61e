import { z } from 'zod';
import { AgentToolName } from '../agent-tool-name';
import { defineTool } from './agent-tool';

/** `finish_task`: ends the run with FINISHED and the summary as its final text. */
export const finishTask = defineTool({
  name: AgentToolName.FINISH_TASK,
  description: 'Finish the task with a summary of what was done. Ends the run.',
  schema: z.strictObject({ summary: z.string().describe('final answer / summary') }),
  effect: false,
  sandbox: false,
  run: (_ctx, a) => ({ ok: true, content: 'task finished', finish: a.summary }),
});
