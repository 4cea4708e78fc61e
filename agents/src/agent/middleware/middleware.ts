import type { ChatMessage, ToolCall } from '@troupe/llm';
import type { RunningSession, StoredMessage } from '../agent-state';

/** What a middleware hook sees besides its call or reply. */
export interface MiddlewareContext {
  /** The session (read it; do not change it: verdicts are how a hook acts). */
  readonly session: RunningSession;
  /** Aborted when the turn stops or takes a `cancel` of its run. */
  readonly signal: AbortSignal;
  /**
   * Calls a model (registry name; the agent's own when undefined) under the run's budget; its
   * usage and cost are charged to the run. Returns the reply's text.
   */
  chat(request: {
    model?: string | undefined;
    messages: readonly ChatMessage[];
    maxTokens?: number;
    purpose: string;
  }): Promise<string>;
}

/** A tool call's outcome as the model will see it. */
export interface ToolOutcomeView {
  ok: boolean;
  content: string;
}

/** Before a model call: go on, send these messages instead (this call only), or stop the run. */
export type BeforeModelVerdict = undefined | { messages: ChatMessage[] } | { stop: string };
/** After a model reply: go on, tell the model something (a user message), or stop the run. */
export type AfterModelVerdict = undefined | { hint: string } | { stop: string };
/**
 * Before a tool runs: go on, run it with these arguments instead, or block it (the model gets
 * `error: blocked by <middleware>: <reason>` as its result).
 */
export type BeforeToolVerdict = undefined | { argumentsText: string } | { block: string };
/**
 * After a tool ran: go on, give the model this content instead (the trajectory keeps the
 * original), tell the model something after the batch, or stop the run.
 */
export type AfterToolVerdict =
  undefined | { content: string } | { hint: string } | { stop: string };

type Maybe<T> = T | Promise<T>;

/**
 * A middleware: ordered hooks around each model call and each tool call of a run. Hooks run in
 * the template's order; a rewrite feeds the next hook, the first block or stop wins. A hook
 * should derive what it remembers from the session's conversation, which survives restarts.
 */
export interface AgentMiddleware {
  /** Named in trajectory events and in the errors it causes. */
  readonly name: string;
  beforeModel?(ctx: MiddlewareContext, messages: readonly ChatMessage[]): Maybe<BeforeModelVerdict>;
  afterModel?(
    ctx: MiddlewareContext,
    reply: Extract<StoredMessage, { role: 'assistant' }>,
  ): Maybe<AfterModelVerdict>;
  beforeTool?(ctx: MiddlewareContext, call: ToolCall): Maybe<BeforeToolVerdict>;
  afterTool?(
    ctx: MiddlewareContext,
    call: ToolCall,
    outcome: ToolOutcomeView,
  ): Maybe<AfterToolVerdict>;
}

/** One intervention, recorded as a `middleware` trajectory event. */
export interface MiddlewareAction {
  middleware: string;
  hook: 'beforeModel' | 'afterModel' | 'beforeTool' | 'afterTool';
  action: 'rewrite' | 'hint' | 'block' | 'stop';
  /** The tool call concerned (tool hooks). */
  toolCallId?: string;
  /** The reason, hint or block text. */
  detail?: string;
}

/** What the chain decided for a model call. */
export interface ModelDecision {
  messages?: ChatMessage[];
  stop?: { by: string; reason: string };
  hints: string[];
  actions: MiddlewareAction[];
}

/** What the chain decided for a tool call. */
export interface ToolDecision {
  call: ToolCall;
  block?: { by: string; reason: string };
  actions: MiddlewareAction[];
}

/** What the chain decided after a tool call. */
export interface ToolResultDecision {
  content: string;
  hints: string[];
  stop?: { by: string; reason: string };
  actions: MiddlewareAction[];
}

/** The template's middleware in order, run around each model and tool call. */
export class MiddlewareChain {
  constructor(readonly middleware: readonly AgentMiddleware[]) {}

  /** True when no middleware is configured (the loop skips the hooks altogether). */
  get empty(): boolean {
    return this.middleware.length === 0;
  }

  async beforeModel(ctx: MiddlewareContext, messages: ChatMessage[]): Promise<ModelDecision> {
    const out: ModelDecision = { hints: [], actions: [] };
    let current = messages;
    for (const m of this.middleware) {
      const v = await m.beforeModel?.(ctx, current);
      if (!v) continue;
      if ('stop' in v) {
        out.stop = { by: m.name, reason: v.stop };
        out.actions.push({
          middleware: m.name,
          hook: 'beforeModel',
          action: 'stop',
          detail: v.stop,
        });
        return out;
      }
      current = v.messages;
      out.messages = current;
      out.actions.push({ middleware: m.name, hook: 'beforeModel', action: 'rewrite' });
    }
    return out;
  }

  async afterModel(
    ctx: MiddlewareContext,
    reply: Extract<StoredMessage, { role: 'assistant' }>,
  ): Promise<ModelDecision> {
    const out: ModelDecision = { hints: [], actions: [] };
    for (const m of this.middleware) {
      const v = await m.afterModel?.(ctx, reply);
      if (!v) continue;
      if ('stop' in v) {
        out.stop = { by: m.name, reason: v.stop };
        out.actions.push({
          middleware: m.name,
          hook: 'afterModel',
          action: 'stop',
          detail: v.stop,
        });
        return out;
      }
      out.hints.push(v.hint);
      out.actions.push({ middleware: m.name, hook: 'afterModel', action: 'hint', detail: v.hint });
    }
    return out;
  }

  async beforeTool(ctx: MiddlewareContext, call: ToolCall): Promise<ToolDecision> {
    const out: ToolDecision = { call, actions: [] };
    for (const m of this.middleware) {
      const v = await m.beforeTool?.(ctx, out.call);
      if (!v) continue;
      const base = { middleware: m.name, hook: 'beforeTool' as const, toolCallId: call.id };
      if ('block' in v) {
        out.block = { by: m.name, reason: v.block };
        out.actions.push({ ...base, action: 'block', detail: v.block });
        return out;
      }
      out.call = { ...out.call, argumentsText: v.argumentsText };
      out.actions.push({ ...base, action: 'rewrite', detail: v.argumentsText });
    }
    return out;
  }

  async afterTool(
    ctx: MiddlewareContext,
    call: ToolCall,
    outcome: ToolOutcomeView,
  ): Promise<ToolResultDecision> {
    const out: ToolResultDecision = { content: outcome.content, hints: [], actions: [] };
    for (const m of this.middleware) {
      const v = await m.afterTool?.(ctx, call, { ok: outcome.ok, content: out.content });
      if (!v) continue;
      const base = { middleware: m.name, hook: 'afterTool' as const, toolCallId: call.id };
      if ('stop' in v) {
        out.stop = { by: m.name, reason: v.stop };
        out.actions.push({ ...base, action: 'stop', detail: v.stop });
        return out;
      }
      if ('hint' in v) {
        out.hints.push(v.hint);
        out.actions.push({ ...base, action: 'hint', detail: v.hint });
        continue;
      }
      out.content = v.content;
      out.actions.push({ ...base, action: 'rewrite' });
    }
    return out;
  }
}

/** A run's middleware chain and what its hooks see. */
export interface RunMiddleware {
  chain: MiddlewareChain;
  ctx: MiddlewareContext;
  /** Records what a hook did as `middleware` trajectory events. */
  record(runId: string, actions: readonly MiddlewareAction[]): void;
}
