import { z } from 'zod';
import type { ToolDefinition } from '@troupe/llm';
import { type AgentTemplate, holdsTool } from './agent-template';
import { AGENT_TOOL_NAMES, type AgentToolName } from './agent-tool-name';
import { AGENT_TOOLS } from './tools/agent-tools';

/** Argument schemas of every tool, by name; a model's arguments are validated against them. */
export const AgentToolArgs = Object.fromEntries(
  AGENT_TOOL_NAMES.map((n) => [n, AGENT_TOOLS[n].schema]),
) as { readonly [N in AgentToolName]: (typeof AGENT_TOOLS)[N]['schema'] }; // the table's, by name

const definitions = new Map<string, ToolDefinition>(
  AGENT_TOOL_NAMES.map((n) => {
    const { schema, description } = AGENT_TOOLS[n];
    const parameters = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
    delete parameters['$schema'];
    return [n, { name: n, description, parameters }];
  }),
);

/** The model-facing definition (JSON Schema from the zod schema) of a tool. */
export function toolDefinition(tool: AgentToolName): ToolDefinition {
  const d = definitions.get(tool);
  if (!d) throw new Error(`unknown tool ${tool}`);
  return d;
}

/** The definitions of the tools `template` holds, in {@link AGENT_TOOL_NAMES} order. */
export function heldToolDefinitions(template: AgentTemplate): ToolDefinition[] {
  return AGENT_TOOL_NAMES.filter((n) => holdsTool(template, n)).map((n) => toolDefinition(n));
}
