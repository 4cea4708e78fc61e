import { z } from 'zod';
import { AgentToolName } from '../agent-tool-name';
import { replaceExact } from '../replace-exact';
import { defineTool } from './agent-tool';
import { argvText, MAX_PATH_BYTES, writingPath } from './tool-text';
import { SandboxArgSchema } from '../../sandboxes/sandbox-template';

/** `edit_file`: replaces the single exact occurrence of a text in a sandbox file. */
export const editFile = defineTool({
  name: AgentToolName.EDIT_FILE,
  description:
    'Replace the single exact occurrence of old_text with new_text in a file. Fails if old_text is not found or is ambiguous.',
  schema: z.strictObject({
    path: argvText(MAX_PATH_BYTES),
    old_text: z.string().min(1).describe('exact text to replace; must occur exactly once'),
    new_text: z.string(),
    sandbox: SandboxArgSchema,
  }),
  effect: true,
  sandbox: true,
  async run({ sandbox, signal }, a) {
    const port = await sandbox(a.sandbox);
    const text = await port.readFile(a.path, { signal });
    const next = replaceExact(text, a.old_text, a.new_text, a.path);
    await writingPath(() => port.writeFile(a.path, next, { signal }));
    return { ok: true, content: `edited ${a.path}: replaced 1 occurrence` };
  },
});
