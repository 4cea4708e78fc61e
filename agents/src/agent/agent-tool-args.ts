import { z } from 'zod';
import { type ToolDefinition, MODEL_NAME } from '@troupe/llm';
import { AGENT_NAME_PATTERN } from './agent-template';
import { AGENT_TOOL_NAMES, type AgentToolName, AgentToolName as T } from './agent-tool-name';

const name = z.string().regex(AGENT_NAME_PATTERN, 'must match [a-z][a-z0-9_-]{0,31}');

/** Argument schemas of every tool, by name; a model's arguments are validated against them. */
export const AgentToolArgs = {
  [T.RUN_TERMINAL_COMMAND]: z
    .strictObject({
      command: z.string().min(1).optional().describe('Shell command (run with /bin/sh -c)'),
      action: z
        .enum(['run', 'poll', 'kill'])
        .default('run')
        .describe('run a command, or poll/kill a background job'),
      background: z.boolean().default(false).describe('start in the background; returns job_id'),
      job_id: z.string().min(1).optional().describe('background job to poll or kill'),
      timeout_s: z.int().min(1).max(3_600).default(120).describe('foreground timeout, seconds'),
    })
    .superRefine((a, ctx) => {
      if (a.action === 'run' && a.command === undefined) {
        ctx.addIssue({ code: 'custom', path: ['command'], message: 'required when action is run' });
      }
      if (a.action !== 'run' && a.job_id === undefined) {
        ctx.addIssue({ code: 'custom', path: ['job_id'], message: 'required for poll and kill' });
      }
    }),
  [T.VIEW_FILE]: z.strictObject({
    path: z.string().min(1),
    start_line: z.int().min(1).optional(),
    end_line: z.int().min(1).optional(),
  }),
  [T.EDIT_FILE]: z.strictObject({
    path: z.string().min(1),
    old_text: z.string().min(1).describe('exact text to replace; must occur exactly once'),
    new_text: z.string(),
  }),
  [T.WRITE_FILE]: z.strictObject({ path: z.string().min(1), content: z.string() }),
  [T.FINISH_TASK]: z.strictObject({ summary: z.string().describe('final answer / summary') }),
  [T.CREATE_SUBAGENT]: z.strictObject({
    name,
    instruction: z.string().min(1),
    model: z
      .string()
      .regex(MODEL_NAME, 'must be a model name or inherit')
      .default('inherit')
      .describe('registry model name, or "inherit"'),
    tools: z.array(z.enum(AGENT_TOOL_NAMES as [AgentToolName, ...AgentToolName[]])).default([]),
  }),
  [T.CALL_SUBAGENT]: z.strictObject({
    target: name,
    request: z.string().min(1),
    mode: z.enum(['sync', 'async']).default('sync'),
    use_parent_history: z.boolean().default(false),
  }),
  [T.SEND_MESSAGE]: z.strictObject({
    to: z
      .string()
      .min(1)
      .describe('a subagent name, a sibling (another subagent of your parent) name, or "parent"'),
    text: z.string().min(1),
  }),
  [T.LIST_AGENTS]: z.strictObject({}),
} as const satisfies Record<AgentToolName, z.ZodType>;

const DESCRIPTIONS: Record<AgentToolName, string> = {
  [T.RUN_TERMINAL_COMMAND]:
    'Run a shell command in the sandbox workspace (foreground with timeout), or start one in the background and poll/kill it by job_id.',
  [T.VIEW_FILE]: 'Show a text file with line numbers (optionally a line range).',
  [T.EDIT_FILE]:
    'Replace the single exact occurrence of old_text with new_text in a file. Fails if old_text is not found or is ambiguous.',
  [T.WRITE_FILE]: 'Create or overwrite a text file.',
  [T.FINISH_TASK]: 'Finish the task with a summary of what was done. Ends the run.',
  [T.CREATE_SUBAGENT]:
    'Create a named subagent with its own instruction, a model (or inherit) and a subset of your tools.',
  [T.CALL_SUBAGENT]:
    'Give a subagent a request. sync waits for its final answer; async returns at once and its result arrives later as a message.',
  [T.SEND_MESSAGE]: 'Send a text message to a subagent, a sibling or your parent.',
  [T.LIST_AGENTS]:
    'List your subagents, their tools and whether they are busy, your parent and your siblings.',
};

const definitions = new Map<string, ToolDefinition>(
  AGENT_TOOL_NAMES.map((n) => {
    const schema = z.toJSONSchema(AgentToolArgs[n], { io: 'input' }) as Record<string, unknown>;
    delete schema['$schema'];
    return [n, { name: n, description: DESCRIPTIONS[n], parameters: schema }];
  }),
);

/** The model-facing definition (JSON Schema from the zod schema) of a tool. */
export function toolDefinition(tool: AgentToolName): ToolDefinition {
  const d = definitions.get(tool);
  if (!d) throw new Error(`unknown tool ${tool}`);
  return d;
}
