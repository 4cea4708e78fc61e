import type { RefFactory } from '@troupe/actors';
import type { ToolCall } from '@troupe/llm';
import type { AgentSessionState, RunningSession, StoredMessage } from './agent-state';
import type { RunMiddleware } from './middleware/middleware';
import type { AgentStopReason } from './agent-stop-reason';
import type { Checkpointer } from './checkpointer';
import { headTail } from './replace-exact';
import type { SessionSandboxes } from '../sandboxes/session-sandboxes';
import type { SubagentCalls } from './subagent-calls';
import type { SkillSource } from '../skills/skill-store';
import type { MemoryStore } from '../memory/memory-store';
import type { McpToolRunner, ModelNames, ToolContext } from './tools/agent-tool';
import type { ToolOutcome } from './tools/tool-outcome';
import { isEffectFree, runToolCall } from './tools/agent-tools';
import { TrajectoryEventType } from './trajectory-event';

/** What a {@link ToolBatch} works with (from its agent turn). */
export interface ToolBatchOptions {
  sessionId: string;
  checkpointer: Pick<Checkpointer<AgentSessionState>, 'emit' | 'settle' | 'commitSoon'>;
  /** Takes the messages posted meanwhile (a tool boundary is a safe point). */
  drain: (runId: string) => Promise<void>;
  /** The turn's signal, also aborted when it takes a `cancel` of its run. */
  signal: () => AbortSignal;
  /** Aborted only when the turn itself must stop: a tool's error is then thrown, not answered. */
  halt: AbortSignal;
  /** The session's sandboxes, by name. */
  sandboxes: SessionSandboxes;
  refs: RefFactory;
  models: ModelNames;
  subagents: SubagentCalls;
  skills: SkillSource | undefined;
  memory: MemoryStore | undefined;
  /** The session's MCP tools for a running session (undefined without MCP). */
  mcp?: (s: RunningSession) => McpToolRunner | undefined;
}

/**
 * The tool calls of a session's last model reply: runs the ones without a result, one at a time,
 * each result checkpointed; or answers them with an error when the run ends without them.
 */
export class ToolBatch {
  constructor(private readonly o: ToolBatchOptions) {}

  /**
   * Runs the tool calls of the last model reply that have no result yet, draining the inbox
   * before the first and after each; true when it ran any. Stops before the next call once the
   * run is cancelled. A tool with an external effect waits for every checkpoint before it; each
   * result's checkpoint overlaps what follows it.
   */
  async runPending(s: RunningSession, middleware?: RunMiddleware): Promise<boolean> {
    const { run, template } = s;
    const { index, calls } = unansweredCalls(s.messages);
    const events = this.o.checkpointer;
    let ran = false;
    for (const call of calls) {
      // A safe point: a cancel posted during the model call stops the run before any tool runs.
      if (!ran) await this.o.drain(run.runId);
      ran = true;
      if (run.cancelRequested || run.middlewareStop) return ran;
      // Everything before an external effect is committed first (see AgentTurn.steps()).
      const effectFree = isEffectFree(template, call.name);
      if (!effectFree) await events.settle();
      // Watchers see a tool with an external effect before it runs; an effect-free one (fast,
      // no sandbox change) is published with its result.
      events.emit(
        run.runId,
        TrajectoryEventType.TOOL_CALL,
        undefined,
        { toolCallId: call.id, name: call.name, argumentsText: call.argumentsText },
        { defer: effectFree },
      );
      const outcome: ToolOutcome & { modelContent?: string } = middleware
        ? await this.runWithMiddleware(s, call, index, middleware)
        : await runToolCall(call, this.context(s, call.id, index), this.o.halt);
      const message: StoredMessage = {
        role: 'tool',
        toolCallId: call.id,
        content: headTail(outcome.modelContent ?? outcome.content, template.maxToolOutputChars),
      };
      s.messages.push(message);
      events.emit(
        run.runId,
        TrajectoryEventType.TOOL_RESULT,
        [message],
        {
          toolCallId: call.id,
          name: call.name,
          ok: outcome.ok,
          ...(message.content !== outcome.content ? { fullContent: outcome.content } : {}),
        },
        { defer: true }, // published with the checkpoint that follows
      );
      if (outcome.finish !== undefined) run.finishSummary ??= outcome.finish;
      await this.o.drain(run.runId);
      await events.commitSoon();
    }
    return ran;
  }

  /**
   * Runs one call through the middleware chain: a blocked call is answered with an error naming
   * the middleware, a rewritten one runs with its new arguments; after it, the chain may rewrite
   * what the model sees (`modelContent`; the trajectory keeps `content`), queue hints for after
   * the batch, or stop the run (recorded in the run's state, committed with the result).
   */
  private async runWithMiddleware(
    s: RunningSession,
    call: ToolCall,
    index: number,
    m: RunMiddleware,
  ): Promise<ToolOutcome & { modelContent?: string }> {
    const { run } = s;
    const before = await m.chain.beforeTool(m.ctx, call);
    m.record(run.runId, before.actions);
    if (before.block) {
      return { ok: false, content: `error: blocked by ${before.block.by}: ${before.block.reason}` };
    }
    const outcome = await runToolCall(before.call, this.context(s, call.id, index), this.o.halt);
    const after = await m.chain.afterTool(m.ctx, before.call, outcome);
    m.record(run.runId, after.actions);
    for (const hint of after.hints) (s.inbound ??= []).push({ role: 'user', content: hint });
    if (after.stop) run.middlewareStop ??= after.stop;
    return after.content === outcome.content
      ? outcome
      : { ...outcome, modelContent: after.content };
  }

  /**
   * Answers the last model reply's tool calls that have no result with `error: not run: the run
   * ended (<reason>)`, so a later run does not execute them.
   */
  answerUnrun(s: AgentSessionState, runId: string, reason: AgentStopReason): void {
    for (const call of unansweredCalls(s.messages).calls) {
      const message: StoredMessage = {
        role: 'tool',
        toolCallId: call.id,
        content: `error: not run: the run ended (${reason})`,
      };
      s.messages.push(message);
      this.o.checkpointer.emit(runId, TrajectoryEventType.TOOL_RESULT, [message], {
        toolCallId: call.id,
        name: call.name,
        ok: false,
      });
    }
  }

  /** What a tool sees of session `s` while it runs tool call `callId`. */
  private context(s: RunningSession, callId: string, assistantIndex: number): ToolContext {
    const { sessionId, sandboxes, refs, models, subagents, skills, memory } = this.o;
    const signal = this.o.signal();
    return {
      session: s,
      sessionId,
      signal,
      callId,
      assistantIndex,
      sandbox: (name) => sandboxes.port(name, { signal }),
      refs,
      models,
      subagents,
      skills,
      memory,
      mcp: this.o.mcp?.(s),
    };
  }
}

/** The last model reply's index and its tool calls that have no result after it. */
function unansweredCalls(messages: readonly StoredMessage[]): { index: number; calls: ToolCall[] } {
  const index = messages.findLastIndex((m) => m.role === 'assistant');
  const assistant = messages[index];
  if (assistant?.role !== 'assistant' || !assistant.toolCalls) return { index, calls: [] };
  const answered = new Set(
    messages.slice(index + 1).flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])),
  );
  return { index, calls: assistant.toolCalls.filter((c) => !answered.has(c.id)) };
}
