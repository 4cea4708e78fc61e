import { AgentStopReason } from '@troupe/agents';
import type { BudgetHook, ChatMessage, LlmClient, ToolDefinition } from '@troupe/llm';
import { ErrorCode, isTroupeError } from '@troupe/proto';
import { type RoleRunResult } from '../shell/finish-protocol';

/** What a tool hands back to the model: text, and optionally a screenshot (PNG, base64). */
export interface RoleToolOutput {
  text: string;
  /** A screenshot shown to the model in a user turn after the turn's tool results. */
  pngBase64?: string;
}

/** One tool a desktop role holds: its definition and what a call does. */
export interface RoleTool {
  definition: ToolDefinition;
  /** Runs a call; a refusal the model should see is returned as text, infrastructure throws. */
  run(args: Record<string, unknown>, signal: AbortSignal): Promise<RoleToolOutput>;
}

/** The `finish_task` tool every role ends with (the summary is its claim or decision). */
export const FINISH_TASK_TOOL: ToolDefinition = {
  name: 'finish_task',
  description:
    'End your work. The summary follows the protocol of your instructions (its first line is your claim or decision).',
  parameters: {
    type: 'object',
    properties: { summary: { type: 'string' } },
    required: ['summary'],
  },
};

/** Options of {@link runRoleSession}. */
export interface RoleSessionOptions {
  llm: Pick<LlmClient, 'chat'>;
  /** Registry name of the role's model. */
  model: string;
  /**
   * The session's conversation, extended in place: a later run of the same session (the Actor's
   * lesson proposal, the Curriculum's next turn) continues it — the role's active context.
   */
  messages: ChatMessage[];
  /** The role's tools besides `finish_task`. */
  tools: readonly RoleTool[];
  /** Model calls of this run at most. */
  maxSteps: number;
  /** Wall time of this run. */
  wallMs: number;
  budget?: BudgetHook;
  /** Facts for the call records and the budget (job, task, role, session). */
  metadata: Readonly<Record<string, string>>;
  signal?: AbortSignal;
}

/**
 * One run of a desktop role's session: model call → tool calls → results, until `finish_task`
 * (stop `FINISHED`, its summary the final text), a turn without tool calls after one "continue"
 * prompt (`NO_TOOL_CALLS`), `maxSteps` model calls (`MAX_STEPS`) or the wall time (`WALL_TIME`).
 * Screenshots a tool returns are shown in a user turn after the turn's tool results (tool
 * messages carry text only). A model call that fails for good throws (an infrastructure error,
 * never a verdict), as does a caller's abort. The desktop roles run this loop in the driver's
 * process against the cluster's LLM client, as the `desktop-tasks` model agent does: the agent
 * actor's tool set has no desktop tools.
 */
export async function runRoleSession(o: RoleSessionOptions): Promise<RoleRunResult> {
  const wall = AbortSignal.timeout(o.wallMs);
  const signal = o.signal ? AbortSignal.any([o.signal, wall]) : wall;
  const byName = new Map(o.tools.map((t) => [t.definition.name, t]));
  const definitions = [...o.tools.map((t) => t.definition), FINISH_TASK_TOOL];
  let continued = false;
  let lastText = '';
  const stop = (stopReason: AgentStopReason): RoleRunResult => ({
    stopReason,
    finalText: lastText,
  });
  for (let step = 0; step < o.maxSteps; step++) {
    let reply;
    try {
      reply = await o.llm.chat({
        model: o.model,
        messages: o.messages,
        tools: definitions,
        signal,
        ...(o.budget ? { budget: o.budget } : {}),
        metadata: { ...o.metadata, step: step + 1 },
      });
    } catch (err) {
      if (wall.aborted && !o.signal?.aborted) return stop(AgentStopReason.WALL_TIME);
      if (isTroupeError(err) && err.code === ErrorCode.BUDGET_EXHAUSTED) {
        return stop(AgentStopReason.BUDGET_EXHAUSTED);
      }
      throw err;
    }
    o.messages.push(reply.message);
    lastText = reply.message.content ?? lastText;
    const calls = reply.message.toolCalls;
    if (calls.length === 0) {
      if (continued) return stop(AgentStopReason.NO_TOOL_CALLS);
      continued = true;
      o.messages.push({
        role: 'user',
        content: 'Continue with the tools, and end with finish_task.',
      });
      continue;
    }
    const images: string[] = [];
    let finished: string | undefined;
    for (const call of calls) {
      let args: Record<string, unknown>;
      try {
        const parsed: unknown = JSON.parse(call.argumentsText);
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
          throw new Error('not an object');
        }
        args = parsed as Record<string, unknown>;
      } catch {
        o.messages.push({
          role: 'tool',
          toolCallId: call.id,
          content: `${call.name}: the arguments must be a JSON object`,
        });
        continue;
      }
      if (call.name === FINISH_TASK_TOOL.name && finished === undefined) {
        finished = typeof args['summary'] === 'string' ? args['summary'] : '';
        o.messages.push({ role: 'tool', toolCallId: call.id, content: 'finished' });
        continue;
      }
      const tool = byName.get(call.name);
      if (tool === undefined || finished !== undefined) {
        o.messages.push({
          role: 'tool',
          toolCallId: call.id,
          content:
            finished !== undefined
              ? `${call.name}: not run, finish_task came first`
              : `${call.name}: no such tool (you hold ${definitions.map((d) => d.name).join(', ')})`,
        });
        continue;
      }
      let out: RoleToolOutput;
      try {
        out = await tool.run(args, signal);
      } catch (err) {
        if (wall.aborted && !o.signal?.aborted) return stop(AgentStopReason.WALL_TIME);
        throw err;
      }
      o.messages.push({ role: 'tool', toolCallId: call.id, content: out.text });
      if (out.pngBase64 !== undefined) images.push(out.pngBase64);
    }
    if (finished !== undefined) {
      return { stopReason: AgentStopReason.FINISHED, finalText: finished };
    }
    if (images.length > 0) {
      o.messages.push({
        role: 'user',
        content: [
          { type: 'text', text: 'The screen now:' },
          { type: 'image', url: `data:image/png;base64,${images.at(-1) ?? ''}` },
        ],
      });
    }
  }
  return stop(AgentStopReason.MAX_STEPS);
}
