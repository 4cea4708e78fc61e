import { z } from 'zod';
import { MODEL_NAME } from '@troupe/llm';

const ModelNameSchema = z.string().regex(MODEL_NAME, 'must be a model name');

/**
 * `doom_loop`: the same failing tool call (name and arguments) `repeats` times in a row, or
 * `repeats` replies with near-identical text in a row, is a loop: `hint` tells the model and goes on,
 * `stop` ends the run with STOPPED_BY_MIDDLEWARE.
 */
export const DoomLoopConfigSchema = z.strictObject({
  use: z.literal('doom_loop'),
  /** Repeats that make a loop. @default 3 */
  repeats: z.int().min(2).max(50).default(3),
  /** @default hint */
  action: z.enum(['hint', 'stop']).default('hint'),
  /** The hint's text. @default a note naming what repeated */
  hint: z.string().min(1).max(4_000).optional(),
  /** Word-trigram similarity (Jaccard) at which two replies are the same. @default 0.9 */
  similarity: z.number().min(0.5).max(1).default(0.9),
});

/**
 * `summarise_tool_output`: a tool result longer than `aboveChars` reaches the model as a summary
 * written by `model` (charged to the run); the trajectory keeps the full text.
 */
export const SummariseToolOutputConfigSchema = z.strictObject({
  use: z.literal('summarise_tool_output'),
  /** @default 8000 */
  aboveChars: z.int().min(200).max(10_000_000).default(8_000),
  /** Registry name of the summarising model. @default the agent's model */
  model: ModelNameSchema.optional(),
  /** Completion cap of a summary. @default 512 */
  maxSummaryTokens: z.int().min(16).max(8_192).default(512),
});

/** `read_before_edit`: `edit_file` on a file the agent has not viewed in this context is refused. */
export const ReadBeforeEditConfigSchema = z.strictObject({ use: z.literal('read_before_edit') });

/** A middleware the agent host registered under `name` (see `AgentActorOptions.plugins`). */
export const PluginConfigSchema = z.strictObject({
  use: z.literal('plugin'),
  name: z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, 'must match [a-z][a-z0-9_-]{0,63}'),
  /** Passed to the plugin's factory, which validates them. @default {} */
  options: z.record(z.string(), z.unknown()).default({}),
});

/** One entry of a template's `middleware` list. */
export const MiddlewareConfigSchema = z.discriminatedUnion('use', [
  DoomLoopConfigSchema,
  SummariseToolOutputConfigSchema,
  ReadBeforeEditConfigSchema,
  PluginConfigSchema,
]);
/** A validated middleware entry. */
export type MiddlewareConfig = z.output<typeof MiddlewareConfigSchema>;

/**
 * What answers for the user when the model replies without a tool call (up to the template's
 * `maxAutoContinues`): a fixed text, or a "fake user" model that reads the conversation and
 * writes the next user message.
 */
export const ContinuationConfigSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('fixed'), text: z.string().min(1).max(4_000) }),
  z.strictObject({
    kind: z.literal('model'),
    /** @default the agent's model */
    model: ModelNameSchema.optional(),
    /** The fake user's system instruction. */
    instruction: z.string().min(1).max(20_000),
  }),
]);
/** A validated continuation policy. */
export type ContinuationConfig = z.output<typeof ContinuationConfigSchema>;
