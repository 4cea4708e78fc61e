import { isHttpUrlWithoutCredentials, NameRule, parseWith } from '@troupe/proto';
import { z } from 'zod';
import { MODEL_NAME } from '@troupe/llm';
import { AGENT_TOOL_NAMES, AgentToolName } from './agent-tool-name';
import { ContinuationConfigSchema, MiddlewareConfigSchema } from './middleware/middleware-config';
import { SkillNameSchema } from '../skills/skill';
import { MemoryScopeSchema } from '../memory/memory-store';
import { McpConfigSchema, mcpServerOf } from '../mcp/mcp-config';
import { TemplateSandboxesSchema } from '../sandboxes/sandbox-template';

/** A subagent or template name: `[a-z][a-z0-9_-]{0,31}`. */
export const AGENT_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/;

/** A subagent or template name ({@link AGENT_NAME_PATTERN}). */
export const AgentNameSchema = z
  .string()
  .regex(AGENT_NAME_PATTERN, 'must match [a-z][a-z0-9_-]{0,31}');

/** Hard limits of one run; the first one reached stops it with its {@link AgentStopReason}. */
export const AgentLimitsSchema = z.strictObject({
  /** Model calls per run. @default 50 */
  maxSteps: z.int().min(1).max(10_000).default(50),
  /** Prompt + completion tokens per run (checked before each model call). @default unlimited */
  maxTokens: z.int().min(1).optional(),
  /**
   * USD per run. Every model call reserves its worst case first; a call that does not fit is
   * never sent. @default unlimited (the injected ledger may still refuse)
   */
  maxCostUsd: z.number().positive().optional(),
  /** Wall time per run, from its start (restarts included). @default unlimited */
  maxWallMs: z.int().min(1).optional(),
});
/** Limits as a caller writes them. */
export type AgentLimitsInput = z.input<typeof AgentLimitsSchema>;
/** Validated, defaulted limits. */
export type AgentLimits = z.output<typeof AgentLimitsSchema>;

/** History compaction settings. */
export const CompactionSchema = z.strictObject({
  /** Compact when the conversation's characters exceed this. */
  maxChars: z.int().min(1_000),
  /** Registry name of the summarising model. @default the agent's model */
  model: z.string().regex(MODEL_NAME, 'must be a model name').optional(),
  /** Characters of recent conversation kept verbatim. @default maxChars / 4 */
  keepRecentChars: z.int().min(0).optional(),
});
/** Compaction settings as a caller writes them. */
export type CompactionInput = z.input<typeof CompactionSchema>;

/**
 * A model endpoint given with the template instead of the registry (an RL trainer's policy
 * server): OpenAI-compatible base URL and model id; called with no key and priced 0.
 */
export const ModelEndpointSchema = z.strictObject({
  /** `http(s)://host[:port]/path`, without credentials. */
  baseURL: z
    .string()
    .max(2_048, 'must be at most 2048 characters')
    .refine(
      isHttpUrlWithoutCredentials,
      'must be an http(s) URL without credentials, such as http://policy:8000/v1',
    ),
  /** Model id sent to the server. */
  model: z.string().regex(MODEL_NAME, NameRule.MODEL_NAME),
});

/** Sampling settings of every model call of a run (an RL rollout's policy sampling). */
export const SamplingSchema = z.strictObject({
  /** Temperature, 0–2. @default the server's */
  temperature: z.number().min(0, 'must be >= 0').max(2, 'must be <= 2').optional(),
  /** Nucleus mass, 0–1 (exclusive of 0). @default the server's */
  topP: z.number().gt(0, 'must be > 0').max(1, 'must be <= 1').optional(),
  /** Seed, for servers that honour it. @default none */
  seed: z
    .int('must be an integer')
    .min(0, 'must be >= 0')
    .max(2 ** 31 - 1)
    .optional(),
  /** Ask for per-token log-probabilities (kept in the trajectory). @default false */
  logprobs: z.boolean().default(false),
  /** Alternatives per token, 0–20 (needs `logprobs`). @default none */
  topLogprobs: z
    .int('must be an integer')
    .min(0, 'must be >= 0')
    .max(20, 'must be <= 20')
    .optional(),
});
/** Sampling settings as a caller writes them. */
export type SamplingInput = z.input<typeof SamplingSchema>;

/**
 * An agent template: the role of a session. The template name is the role; a session id names
 * one instance.
 */
export const AgentTemplateSchema = z.strictObject({
  /** Role name, `[a-z][a-z0-9_-]{0,31}`. */
  name: AgentNameSchema,
  /** System instruction. */
  instruction: z.string().min(1, 'must not be empty').max(200_000),
  /** Registry name of the model. */
  model: z.string().regex(MODEL_NAME, 'must be a model name'),
  /** Tools the agent holds (`finish_task` is always available). @default [] */
  tools: z
    .array(z.enum(AGENT_TOOL_NAMES as [AgentToolName, ...AgentToolName[]]))
    .default([])
    .refine((t) => new Set(t).size === t.length, 'must not repeat a tool'),
  /** Limits per run. @default {maxSteps: 50} */
  limits: AgentLimitsSchema.default({ maxSteps: 50 }),
  /**
   * When the model answers without a tool call, prompt it with "continue" up to this many times
   * per run before stopping with NO_TOOL_CALLS (`runUntilExplicitFinish`). @default 0
   */
  maxAutoContinues: z.int().min(0).max(100).default(0),
  /** History compaction. @default none */
  compaction: CompactionSchema.optional(),
  /** Completion cap per model call. @default the model's maxTokens */
  maxTokensPerCall: z.int().min(1).optional(),
  /** Characters of a tool result kept in the context (head and tail). @default 16000 */
  maxToolOutputChars: z.int().min(200).default(16_000),
  /** Characters of an inbound message kept in the context (the rest is saved). @default 8000 */
  maxMessageChars: z.int().min(200).default(8_000),
  /**
   * Hooks around each model and tool call, in order (`doom_loop`, `summarise_tool_output`,
   * `read_before_edit`, or a host's `plugin`); subagents inherit them. @default none
   */
  middleware: z.array(MiddlewareConfigSchema).max(16).optional(),
  /**
   * What answers a reply without a tool call (up to `maxAutoContinues`): a fixed text or a
   * fake-user model. @default the fixed "Continue working on the task…" prompt
   */
  continuation: ContinuationConfigSchema.optional(),
  /**
   * Skills of the cluster's skill store the agent may load (`load_skill`, held when this is not
   * empty); their descriptions are listed in the system prompt. @default none
   */
  skills: z
    .array(SkillNameSchema)
    .max(64)
    .refine((t) => new Set(t).size === t.length, 'must not repeat a skill')
    .optional(),
  /**
   * Long-term memory in the cluster's memory store: the agent holds `memory_search`,
   * `memory_read` and (unless `write: false`) `memory_write` on `scope`; `policy` replaces the
   * default memory policy stated in the system prompt. Subagents share it. @default none
   */
  memory: z
    .strictObject({
      scope: MemoryScopeSchema,
      policy: z.string().min(1).max(4_000).optional(),
      write: z.boolean().default(true),
    })
    .optional(),
  /**
   * MCP tool servers: `stdio` ones run inside the session's sandbox, `url` ones are reached over
   * streamable HTTP; their tools reach the model as `mcp__<server>__<tool>`. @default none
   */
  mcp: McpConfigSchema.optional(),
  /**
   * Sandboxes the agent creates for itself, by name (`[a-z][a-z0-9-]{0,31}`, e.g. `main` and
   * `tools`), each from its own image with its own limits: created on first use through the node
   * agent's `sandbox` actor with the standard policy, destroyed when the run ends. The sandbox
   * tools pick one with their `sandbox` argument (default `main`); subagents get the ones
   * `create_subagent` grants, shared. @default none (only sandboxes the caller gives)
   */
  sandboxes: TemplateSandboxesSchema.optional(),
  /**
   * Call this endpoint for the agent's own model calls instead of the registry's `model` (which
   * then only names the calls in records): an RL trainer's policy server. Never sent a key.
   * Middleware and compaction models still come from the registry. @default the registry's
   */
  endpoint: ModelEndpointSchema.optional(),
  /**
   * Sampling settings of the agent's own model calls; with `logprobs` each `model_call` event
   * keeps the reply's per-token log-probabilities in `data.logprobs`. @default the server's
   */
  sampling: SamplingSchema.optional(),
});
/** A template as a caller writes it. */
export type AgentTemplateInput = z.input<typeof AgentTemplateSchema>;
/** A validated, defaulted template. */
export type AgentTemplate = z.output<typeof AgentTemplateSchema>;

/**
 * Validates a template; every problem is reported in one `INVALID_ARGUMENT` naming its field
 * (`template.limits.maxSteps: …`).
 */
export function parseAgentTemplate(input: unknown): AgentTemplate {
  return parseWith(AgentTemplateSchema, input, { prefix: 'template' });
}

/**
 * Whether `template` holds `tool` (`finish_task` is held by every agent, `load_skill` by every
 * agent with skills, the memory tools by every agent with memory).
 */
export function holdsTool(template: AgentTemplate, tool: string): boolean {
  return (
    tool === AgentToolName.FINISH_TASK ||
    (tool === AgentToolName.LOAD_SKILL && (template.skills?.length ?? 0) > 0) ||
    (template.memory !== undefined &&
      (tool === AgentToolName.MEMORY_SEARCH ||
        tool === AgentToolName.MEMORY_READ ||
        (tool === AgentToolName.MEMORY_WRITE && template.memory.write))) ||
    (template.tools as string[]).includes(tool) ||
    holdsMcpServer(template, mcpServerOf(tool))
  );
}

/** Whether `template` names MCP server `server` (the tools of its own `mcp` field). */
export function holdsMcpServer(template: AgentTemplate, server: string | undefined): boolean {
  return server !== undefined && (template.mcp?.servers.some((s) => s.name === server) ?? false);
}
