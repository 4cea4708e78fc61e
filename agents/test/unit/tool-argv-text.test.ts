import { TroupeError } from '@troupe/proto';
import { parseAgentTemplate } from '../../src/agent/agent-template';
import { AgentToolName } from '../../src/agent/agent-tool-name';
import type { ToolContext } from '../../src/agent/tools/agent-tool';
import { runToolCall } from '../../src/agent/tools/agent-tools';

// Found by the tool-calls fuzz target: a NUL in a path or command reached the sandbox's spawn
// and came back as `error: INTERNAL: The argument 'args[3]' must be a string without null
// bytes`. The tools' schemas now refuse it, naming the argument, before the sandbox is touched.
const template = parseAgentTemplate({
  name: 'nul',
  instruction: 'x',
  model: 'fake-model',
  tools: [
    AgentToolName.RUN_TERMINAL_COMMAND,
    AgentToolName.VIEW_FILE,
    AgentToolName.EDIT_FILE,
    AgentToolName.WRITE_FILE,
  ],
});
let sandboxCalls = 0;
const ctx = {
  session: { template },
  sandbox: async () => {
    sandboxCalls++;
    throw new Error('the sandbox must not be reached');
  },
} as unknown as ToolContext;

test.each([
  [AgentToolName.VIEW_FILE, { path: 'seed.txt\u0000.png' }, 'arguments.path'],
  [AgentToolName.WRITE_FILE, { path: 'a\u0000b', content: 'x' }, 'arguments.path'],
  [AgentToolName.EDIT_FILE, { path: '\u0000', old_text: 'a', new_text: 'b' }, 'arguments.path'],
  [AgentToolName.RUN_TERMINAL_COMMAND, { command: 'echo a\u0000b' }, 'arguments.command'],
  [AgentToolName.RUN_TERMINAL_COMMAND, { action: 'poll', job_id: 'j\u0000' }, 'arguments.job_id'],
])('%s refuses a NUL character, naming the argument', async (name, args, field) => {
  const r = await runToolCall(
    { id: 'c1', name, argumentsText: JSON.stringify(args) },
    ctx,
    new AbortController().signal,
  );
  expect(r.ok).toBe(false);
  expect(r.content).toContain(field);
  expect(r.content).toContain('must not contain a NUL character');
  expect(r.content).not.toContain('INTERNAL');
  expect(sandboxCalls).toBe(0);
});

// Found by the tool-calls fuzz target at 10,000 cases: a path of 130,000+ characters reached
// the sandbox's spawn and came back as `error: INTERNAL: spawn E2BIG`.
test.each([
  [AgentToolName.VIEW_FILE, { path: 'y'.repeat(168_401) }, 'arguments.path', 4_095],
  [AgentToolName.WRITE_FILE, { path: 'é'.repeat(2_048), content: 'x' }, 'arguments.path', 4_095],
  [
    AgentToolName.EDIT_FILE,
    { path: 'y'.repeat(5_000), old_text: 'a', new_text: 'b' },
    'arguments.path',
    4_095,
  ],
  [
    AgentToolName.RUN_TERMINAL_COMMAND,
    { action: 'poll', job_id: 'y'.repeat(1_033) },
    'arguments.job_id',
    128,
  ],
  [
    AgentToolName.RUN_TERMINAL_COMMAND,
    { command: 'y'.repeat(131_072) },
    'arguments.command',
    131_071,
  ],
])('%s refuses an argument longer than argv takes, naming it', async (name, args, field, max) => {
  const r = await runToolCall(
    { id: 'c1', name, argumentsText: JSON.stringify(args) },
    ctx,
    new AbortController().signal,
  );
  expect(r.ok).toBe(false);
  expect(r.content).toContain(`${field}: must be at most ${max} bytes`);
  expect(sandboxCalls).toBe(0);
});

test('write_file into a directory is an error naming arguments.path', async () => {
  const dirCtx = {
    session: { template },
    sandbox: async () => ({
      writeFile: async (path: string) => {
        throw new TroupeError('INVALID_ARGUMENT', `cannot write ${path}: Is a directory`);
      },
    }),
  } as unknown as ToolContext;
  const r = await runToolCall(
    {
      id: 'c1',
      name: AgentToolName.WRITE_FILE,
      argumentsText: JSON.stringify({ path: '/', content: 'x' }),
    },
    dirCtx,
    new AbortController().signal,
  );
  expect(r.ok).toBe(false);
  expect(r.content).toMatch(/`arguments\.path`: cannot write \/: Is a directory/);
});
