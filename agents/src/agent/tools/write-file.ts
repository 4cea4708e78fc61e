import { z } from 'zod';
import { AgentToolName } from '../agent-tool-name';
import { defineTool } from './agent-tool';
import { argvText, MAX_PATH_BYTES, writingPath } from './tool-text';
import { SandboxArgSchema } from '../../sandboxes/sandbox-template';

/** `write_file`: creates or overwrites a sandbox file. */
export const writeFile = defineTool({
  name: AgentToolName.WRITE_FILE,
  description: 'Create or overwrite a text file.',
  schema: z.strictObject({
    path: argvText(MAX_PATH_BYTES),
    content: z.string(),
    sandbox: SandboxArgSchema,
  }),
  effect: true,
  sandbox: true,
  async run({ sandbox, signal }, a) {
    const port = await sandbox(a.sandbox);
    await writingPath(() => port.writeFile(a.path, a.content, { signal }));
    return { ok: true, content: `wrote ${Buffer.byteLength(a.content)} bytes to ${a.path}` };
  },
});
