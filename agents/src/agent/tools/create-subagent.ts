import { z } from 'zod';
import { MODEL_NAME } from '@troupe/llm';
import { AgentNameSchema, holdsTool } from '../agent-template';
import { SkillNameSchema } from '../../skills/skill';
import { McpServerNameSchema } from '../../mcp/mcp-config';
import { MAIN_SANDBOX, SandboxNameSchema } from '../../sandboxes/sandbox-template';
import { heldList } from '../../sandboxes/session-sandboxes';
import {
  AGENT_TOOL_NAMES,
  type AgentToolName as ToolName,
  AgentToolName,
} from '../agent-tool-name';
import { defineTool } from './agent-tool';
import { toolError } from './tool-outcome';

/**
 * `create_subagent`: defines a named subagent (instruction, model, a subset of the caller's
 * tools) in the caller's persisted state. No hidden grants: a tool the caller lacks is refused.
 */
export const createSubagent = defineTool({
  name: AgentToolName.CREATE_SUBAGENT,
  description:
    'Create a named subagent with its own instruction, a model (or inherit), a subset of your tools, a subset of your skills, a subset of your MCP servers and a subset of your sandboxes (shared with it).',
  schema: z.strictObject({
    name: AgentNameSchema,
    instruction: z.string().min(1),
    model: z
      .string()
      .regex(MODEL_NAME, 'must be a model name or inherit')
      .default('inherit')
      .describe('registry model name, or "inherit"'),
    tools: z.array(z.enum(AGENT_TOOL_NAMES as [ToolName, ...ToolName[]])).default([]),
    skills: z.array(SkillNameSchema).default([]).describe('a subset of your skills'),
    mcp: z
      .array(McpServerNameSchema)
      .default([])
      .describe('names of your MCP servers it may use (all their tools)'),
    sandboxes: z
      .array(SandboxNameSchema)
      .optional()
      .describe('names of your sandboxes it may use, shared with it (default: your main one)'),
  }),
  effect: false,
  sandbox: false,
  run({ session: s, sessionId: parentId, models }, a) {
    const lacking = a.tools.filter((t) => !holdsTool(s.template, t));
    if (lacking.length > 0) {
      return toolError(
        `PERMISSION_DENIED: \`arguments.tools\`: a subagent may only get tools you hold; you lack ${lacking.join(', ')}`,
      );
    }
    if (new Set(a.tools).size !== a.tools.length) {
      return toolError('`arguments.tools`: must not repeat a tool');
    }
    const mine = new Set(s.template.skills ?? []);
    const lackingSkills = a.skills.filter((k) => !mine.has(k));
    if (lackingSkills.length > 0) {
      return toolError(
        `PERMISSION_DENIED: \`arguments.skills\`: a subagent may only get skills you have; you lack ${lackingSkills.join(', ')}`,
      );
    }
    const myServers = new Set(s.template.mcp?.servers.map((m) => m.name) ?? []);
    const lackingServers = a.mcp.filter((m) => !myServers.has(m));
    if (lackingServers.length > 0) {
      return toolError(
        `PERMISSION_DENIED: \`arguments.mcp\`: a subagent may only get MCP servers you hold; you lack ${lackingServers.join(', ')}`,
      );
    }
    const held = s.sandboxes ?? {};
    const lackingSandboxes = (a.sandboxes ?? []).filter((n) => !Object.hasOwn(held, n));
    if (lackingSandboxes.length > 0) {
      return toolError(
        `PERMISSION_DENIED: \`arguments.sandboxes\`: a subagent may only get sandboxes you hold; you lack ${lackingSandboxes.join(', ')} (yours: ${heldList(held)})`,
      );
    }
    if (a.sandboxes && new Set(a.sandboxes).size !== a.sandboxes.length) {
      return toolError('`arguments.sandboxes`: must not repeat a sandbox');
    }
    const granted = a.sandboxes ?? (Object.hasOwn(held, MAIN_SANDBOX) ? [MAIN_SANDBOX] : []);
    const model = a.model === 'inherit' ? s.template.model : a.model;
    if (!models.has(model)) {
      return toolError(
        `\`arguments.model\`: '${model}' is not a registered model (registered: ${models.names().join(', ')}, or inherit)`,
      );
    }
    if (s.subagents[a.name]) {
      return toolError(`ALREADY_EXISTS: \`arguments.name\`: a subagent '${a.name}' exists`);
    }
    const sessionId = `${parentId}__${a.name}`;
    if (sessionId.length > 128) {
      return toolError(`\`arguments.name\`: the subagent's session id would exceed 128 characters`);
    }
    s.subagents[a.name] = {
      name: a.name,
      sessionId,
      instruction: a.instruction,
      model,
      tools: a.tools,
      ...(a.skills.length > 0 ? { skills: [...new Set(a.skills)] } : {}),
      ...(a.mcp.length > 0 ? { mcp: [...new Set(a.mcp)] } : {}),
      ...(a.sandboxes ? { sandboxes: a.sandboxes } : {}),
    };
    return {
      ok: true,
      content: `created subagent ${a.name} (session ${sessionId}, model ${model}, tools [${a.tools.join(', ')}]${a.skills.length > 0 ? `, skills [${a.skills.join(', ')}]` : ''}${a.mcp.length > 0 ? `, mcp [${a.mcp.join(', ')}]` : ''}${granted.length > 0 ? `, sandboxes [${granted.join(', ')}]` : ''})`,
    };
  },
});
