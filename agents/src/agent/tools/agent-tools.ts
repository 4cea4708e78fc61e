import { toTroupeError } from '@troupe/proto';
import type { z } from 'zod';
import type { ToolCall } from '@troupe/llm';
import { type AgentTemplate, holdsMcpServer, holdsTool } from '../agent-template';
import { mcpServerOf } from '../../mcp/mcp-config';
import {
  AGENT_TOOL_NAMES,
  type AgentToolName as ToolName,
  AgentToolName as T,
} from '../agent-tool-name';
import type { AgentTool, ToolContext } from './agent-tool';
import { callSubagent } from './call-subagent';
import { createSubagent } from './create-subagent';
import { editFile } from './edit-file';
import { finishTask } from './finish-task';
import { listAgents } from './list-agents';
import { loadSkill } from './load-skill';
import { memoryRead, memorySearch, memoryWrite } from '../../memory/memory-tools';
import { runTerminalCommand } from './run-terminal-command';
import { sendMessage } from './send-message';
import { type ToolOutcome, toolError } from './tool-outcome';
import { viewFile } from './view-file';
import { writeFile } from './write-file';

/**
 * Every tool an agent may hold, by name. A tool is one file in this folder ({@link defineTool})
 * and one line here; the `satisfies` check keeps the table and {@link AgentToolName} in step.
 */
export const AGENT_TOOLS = {
  [T.RUN_TERMINAL_COMMAND]: runTerminalCommand,
  [T.VIEW_FILE]: viewFile,
  [T.EDIT_FILE]: editFile,
  [T.WRITE_FILE]: writeFile,
  [T.FINISH_TASK]: finishTask,
  [T.CREATE_SUBAGENT]: createSubagent,
  [T.CALL_SUBAGENT]: callSubagent,
  [T.SEND_MESSAGE]: sendMessage,
  [T.LIST_AGENTS]: listAgents,
  [T.LOAD_SKILL]: loadSkill,
  [T.MEMORY_WRITE]: memoryWrite,
  [T.MEMORY_SEARCH]: memorySearch,
  [T.MEMORY_READ]: memoryRead,
} as const satisfies { readonly [N in ToolName]: AgentTool<N, z.ZodType> };

/** The tool named `name`, if there is one. */
function agentTool(name: string): (typeof AGENT_TOOLS)[ToolName] | undefined {
  return Object.hasOwn(AGENT_TOOLS, name) ? AGENT_TOOLS[name as ToolName] : undefined;
}

/** Tools that act on the session's sandbox (a run of a template holding one needs `sandboxId`). */
export const SANDBOX_TOOLS: ReadonlySet<string> = new Set(
  AGENT_TOOL_NAMES.filter((n) => AGENT_TOOLS[n].sandbox),
);

/**
 * True when a call of tool `name` can run before the model reply that made it is committed: the
 * tool has no effect outside the session's state, or the agent does not hold it (it is refused
 * without running anything).
 */
export function isEffectFree(template: AgentTemplate, name: string): boolean {
  // An MCP tool may do anything its server does.
  const server = mcpServerOf(name);
  if (server !== undefined) return !holdsMcpServer(template, server);
  return agentTool(name)?.effect !== true || !holdsTool(template, name);
}

/**
 * Runs a model's tool call. An unknown tool, one the agent does not hold, arguments that are not
 * JSON or break the schema, and an error the tool throws come back as an `error:` result for the
 * model — except once `halt` is aborted (the turn stops): then the tool's error is thrown.
 */
export async function runToolCall(
  call: ToolCall,
  ctx: ToolContext,
  halt: AbortSignal,
): Promise<ToolOutcome> {
  const template = ctx.session.template;
  const tool = agentTool(call.name);
  const mcp = ctx.mcp && holdsMcpServer(template, mcpServerOf(call.name)) ? ctx.mcp : undefined;
  if (!mcp && (!tool || !holdsTool(template, call.name))) {
    const held = AGENT_TOOL_NAMES.filter((n) => holdsTool(template, n));
    const servers = template.mcp?.servers.map((s) => s.name) ?? [];
    const mcpNote =
      servers.length > 0 ? ` and the mcp__<server>__ tools of ${servers.join(', ')}` : '';
    return toolError(`unknown tool '${call.name}'; your tools: ${held.join(', ')}${mcpNote}`);
  }
  let raw: unknown;
  try {
    raw = call.argumentsText.trim() === '' ? {} : JSON.parse(call.argumentsText);
  } catch (err) {
    return toolError(
      `the arguments of ${call.name} are not valid JSON (${(err as Error).message}); send a JSON object`,
    );
  }
  try {
    // MCP calls answer their own errors (server down, timeout) and throw only on the turn's abort.
    if (mcp) return await mcp.call(call.name, raw);
    return await (tool as NonNullable<typeof tool>).invoke(ctx, raw);
  } catch (err) {
    if (halt.aborted) throw err;
    const e = toTroupeError(err);
    return toolError(`${e.code}: ${e.message}`);
  }
}
