import { z } from 'zod';
import { AgentToolName } from '../agent-tool-name';
import { defineTool } from './agent-tool';
import { argvText, MAX_PATH_BYTES } from './tool-text';
import { SandboxArgSchema } from '../../sandboxes/sandbox-template';
import { toolError } from './tool-outcome';

/** `view_file`: a sandbox file with line numbers, or a range of its lines. */
export const viewFile = defineTool({
  name: AgentToolName.VIEW_FILE,
  description: 'Show a text file with line numbers (optionally a line range).',
  schema: z.strictObject({
    path: argvText(MAX_PATH_BYTES),
    start_line: z.int().min(1).optional(),
    end_line: z.int().min(1).optional(),
    sandbox: SandboxArgSchema,
  }),
  effect: false,
  sandbox: true,
  async run({ sandbox, signal }, a) {
    const text = await (await sandbox(a.sandbox)).readFile(a.path, { signal });
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    const from = a.start_line ?? 1;
    const to = Math.min(a.end_line ?? lines.length, lines.length);
    if (from > Math.max(lines.length, 1)) {
      return toolError(`\`arguments.start_line\`: ${a.path} has ${lines.length} lines`);
    }
    const shown = lines.slice(from - 1, to).map((l, i) => `${String(from + i).padStart(6)}\t${l}`);
    return {
      ok: true,
      content: `${a.path} (lines ${from}-${to} of ${lines.length})\n${shown.join('\n')}`,
    };
  },
});
