import type { RefFactory } from '@troupe/actors';
import { fromZodError } from '@troupe/proto';
import type { z } from 'zod';
import type { RunningSession } from '../agent-state';
import type { AgentToolName } from '../agent-tool-name';
import type { SandboxPort } from '../sandbox-port';
import type { SubagentCalls } from '../subagent-calls';
import type { SkillSource } from '../../skills/skill-store';
import type { MemoryStore } from '../../memory/memory-store';
import { type ToolOutcome, toolError } from './tool-outcome';

/** Runs a held MCP tool by its model-facing name (`mcp__<server>__<tool>`). */
export interface McpToolRunner {
  call(name: string, args: unknown): Promise<ToolOutcome>;
}

/** The model names a session may use (the LLM client's registry). */
export interface ModelNames {
  has(name: string): boolean;
  names(): readonly string[];
}

/** What a tool sees of the session whose model asked for it (one per tool call). */
export interface ToolContext {
  /** The session; a tool may change its state, which is checkpointed with the result. */
  readonly session: RunningSession;
  /** The session's id (the agent actor's id). */
  readonly sessionId: string;
  /** Aborted when the turn stops or takes a `cancel` of its run: pass it to every wait. */
  readonly signal: AbortSignal;
  /** Id of the tool call being run. */
  readonly callId: string;
  /** Index in the conversation of the model reply that made the call. */
  readonly assistantIndex: number;
  /**
   * The session's sandbox `name` (default `main`), created first when the template declares it
   * and it was not yet.
   * @throws TroupeError `INVALID_ARGUMENT` naming `arguments.sandbox` (and the held names) for a
   *   name the session does not hold; the node agent's error when creating fails
   */
  readonly sandbox: (name?: string) => Promise<SandboxPort>;
  /** Refs to other actors (sends carry the session as sender). */
  readonly refs: RefFactory;
  /** The registered model names. */
  readonly models: ModelNames;
  /** The session's subagent calls. */
  readonly subagents: SubagentCalls;
  /** The cluster's skills, when this host has a skill store. */
  readonly skills: SkillSource | undefined;
  /** The cluster's memory store, when this host has one. */
  readonly memory: MemoryStore | undefined;
  /** The session's MCP tools, when this host offers MCP and the template names servers. */
  readonly mcp?: McpToolRunner | undefined;
}

/** A tool as its file writes it: name, model-facing description, argument schema, handler. */
export interface AgentToolSpec<N extends AgentToolName, S extends z.ZodType> {
  readonly name: N;
  /** What the model is told the tool does. */
  readonly description: string;
  /** The arguments; the model's JSON is validated against it before {@link run}. */
  readonly schema: S;
  /**
   * True when running the tool has an effect outside the session's own state: the model reply
   * asking for it is committed before it runs, so after a crash it runs again only if its own
   * result was not committed. An effect-free tool runs at once and the reply is committed with
   * its result.
   */
  readonly effect: boolean;
  /** True when the tool acts on the session's sandbox (a run must name one). */
  readonly sandbox: boolean;
  /** Runs the tool on validated arguments; a thrown error becomes an `error:` result. */
  run(ctx: ToolContext, args: z.output<S>): ToolOutcome | Promise<ToolOutcome>;
}

/** A tool of the table ({@link defineTool}). */
export interface AgentTool<N extends AgentToolName, S extends z.ZodType> extends AgentToolSpec<
  N,
  S
> {
  /**
   * Validates `raw` against the schema and runs the tool; bad arguments are an `error:` result
   * naming the field (`arguments.path: …`).
   */
  invoke(ctx: ToolContext, raw: unknown): Promise<ToolOutcome>;
}

/** Defines a tool: its handler receives the arguments as its schema parses them. */
export function defineTool<N extends AgentToolName, S extends z.ZodType>(
  spec: AgentToolSpec<N, S>,
): AgentTool<N, S> {
  return {
    ...spec,
    async invoke(ctx, raw) {
      const parsed = spec.schema.safeParse(raw);
      if (!parsed.success) {
        return toolError(fromZodError(parsed.error, { prefix: 'arguments' }).message);
      }
      return spec.run(ctx, parsed.data);
    },
  };
}
