import { invalidArgument, parseWith } from '@troupe/proto';
import { parseDocument } from 'yaml';
import { z } from 'zod';

// The driver-agnostic part of a job spec. The driver named by `kind` validates `tasks` and
// `config` (see JobDriver.validate); everything else is checked here, so every driver gets the
// same rules and the same field-naming errors.

/** Names of job kinds (drivers) and of jobs: what `kind` and `name` must match. */
export const JOB_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const JOB_NAME_RULE = 'must match [a-z0-9][a-z0-9._-]{0,63}';
const LABEL_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$/;
const LABEL_KEY_RULE = 'label keys must match [A-Za-z0-9][A-Za-z0-9._/-]{0,62}';

/** Largest `concurrency` a job may ask for. */
export const MAX_JOB_CONCURRENCY = 1_000;

const positiveInt = (max: number) =>
  z
    .number({ error: 'must be a number' })
    .int({ error: 'must be an integer' })
    .min(1, { error: 'must be >= 1' })
    .max(max, { error: `must be <= ${max}` });

/** Agent and model configuration handed to the driver as is (drivers without agents ignore it). */
export const AgentConfigSchema = z
  .object({
    /** Model name from the model registry. */
    model: z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' }),
    /** Agent template (role) name. @default the driver's */
    template: z.string({ error: 'must be a string' }).min(1).optional(),
    /** Max agent steps per task. */
    maxSteps: positiveInt(100_000).optional(),
    /** Max completion tokens per model call. */
    maxTokens: positiveInt(1_000_000).optional(),
    /** Sampling temperature. */
    temperature: z
      .number({ error: 'must be a number' })
      .min(0, { error: 'must be >= 0' })
      .max(2, { error: 'must be <= 2' })
      .optional(),
    /** Anything else the driver's agent understands. */
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

/** Budget of the whole job (a `job:<jobId>` scope of the budget ledger). */
export const JobBudgetSchema = z
  .object({
    /** Dollar cap for every model call of the job. @default unlimited */
    usd: z
      .number({ error: 'must be a number' })
      .nonnegative({ error: 'must be >= 0' })
      .max(1_000_000, { error: 'must be <= 1000000' })
      .optional(),
    /** Token cap (prompt + completion). @default unlimited */
    tokens: z
      .number({ error: 'must be a number' })
      .int({ error: 'must be an integer' })
      .nonnegative({ error: 'must be >= 0' })
      .max(1e12, { error: 'must be <= 1e12' })
      .optional(),
  })
  .strict();

/** Retries of infrastructure failures (graded failures are never retried). */
export const RetryPolicySchema = z
  .object({
    /** Retries after the first attempt. @default 2 */
    max: z
      .number({ error: 'must be a number' })
      .int({ error: 'must be an integer' })
      .min(0, { error: 'must be >= 0' })
      .max(10, { error: 'must be <= 10' })
      .default(2),
    /** Delay before the first retry; doubles with each further one. @default 1000 */
    backoffMs: z
      .number({ error: 'must be a number' })
      .int({ error: 'must be an integer' })
      .min(0, { error: 'must be >= 0' })
      .max(600_000, { error: 'must be <= 600000' })
      .default(1_000),
    /** Cap of the delay. @default 60000 */
    maxBackoffMs: z
      .number({ error: 'must be a number' })
      .int({ error: 'must be an integer' })
      .min(0, { error: 'must be >= 0' })
      .max(3_600_000, { error: 'must be <= 3600000' })
      .default(60_000),
  })
  .strict();

/**
 * A job spec, as submitted (YAML or JSON) and persisted once validated. Unknown keys are refused
 * everywhere except inside `tasks` and `config`, which belong to the driver.
 */
export const JobSpecSchema = z
  .object({
    /** Human-readable name. @default the kind */
    name: z
      .string({ error: 'must be a string' })
      .regex(JOB_NAME_PATTERN, { error: JOB_NAME_RULE })
      .optional(),
    /** Job kind: the name of a driver registered with the coordinator (e.g. `shell-tasks`). */
    kind: z
      .string({ error: 'is required (a driver name, e.g. shell-tasks)' })
      .regex(JOB_NAME_PATTERN, { error: JOB_NAME_RULE }),
    /** The task set, in the driver's format. */
    tasks: z.unknown().refine((v) => v !== undefined && v !== null, { error: 'is required' }),
    /** Driver options. @default {} */
    config: z.record(z.string(), z.unknown(), { error: 'must be a mapping' }).default(() => ({})),
    /** Agent/model configuration for drivers that run agents. */
    agent: AgentConfigSchema.optional(),
    /** Tasks running at once. @default 4 */
    concurrency: positiveInt(MAX_JOB_CONCURRENCY).default(4),
    /** Higher priorities are scheduled first (placement fair queue). @default 0 */
    priority: z
      .number({ error: 'must be a number' })
      .int({ error: 'must be an integer' })
      .min(-100, { error: 'must be >= -100' })
      .max(100, { error: 'must be <= 100' })
      .default(0),
    /** Share of contended capacity among jobs of the same priority. @default 1 */
    weight: z
      .number({ error: 'must be a number' })
      .positive({ error: 'must be > 0' })
      .max(1_000, { error: 'must be <= 1000' })
      .default(1),
    /** Spending caps. @default none */
    budget: JobBudgetSchema.optional(),
    /** Wall time of one task attempt (work and grading of what exists). @default 600000 */
    taskTimeoutMs: z
      .number({ error: 'must be a number' })
      .int({ error: 'must be an integer' })
      .min(100, { error: 'must be >= 100' })
      .max(7 * 24 * 3_600_000, { error: 'must be <= 604800000 (7 days)' })
      .default(600_000),
    /** Retries of infrastructure failures. */
    retries: RetryPolicySchema.default(() => RetryPolicySchema.parse({})),
    /** Labels for listing and filtering. @default {} */
    labels: z
      .record(
        z.string().regex(LABEL_KEY_PATTERN, { error: LABEL_KEY_RULE }),
        z
          .string({ error: 'label values must be strings' })
          .max(256, { error: 'label values must be at most 256 characters' }),
        { error: 'must be a mapping of strings' },
      )
      .refine((l) => Object.keys(l).length <= 32, { error: 'at most 32 labels' })
      .default(() => ({})),
  })
  .strict()
  .superRefine((spec, ctx) => {
    if (spec.retries.maxBackoffMs < spec.retries.backoffMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['retries', 'maxBackoffMs'],
        message: 'must be >= retries.backoffMs',
      });
    }
  });

/** A validated job spec with defaults filled in. */
export type JobSpec = z.output<typeof JobSpecSchema>;
/** What a user writes (before defaults). */
export type JobSpecInput = z.input<typeof JobSpecSchema>;

/** Encoding of a spec document. */
export const SpecTextFormat = { AUTO: 'auto', YAML: 'yaml', JSON: 'json' } as const;
/** One of {@link SpecTextFormat}. */
export type SpecTextFormat = (typeof SpecTextFormat)[keyof typeof SpecTextFormat];

/**
 * Parses a spec document (YAML — a superset of JSON — or strict JSON) into a plain value. Syntax
 * errors become `INVALID_ARGUMENT` on field `spec` with the line and column.
 */
export function parseSpecText(text: string, format: SpecTextFormat = 'auto'): unknown {
  if (text.trim() === '')
    throw invalidArgument('spec', 'must be a non-empty YAML or JSON document');
  if (format === 'json') {
    try {
      return JSON.parse(text) as unknown;
    } catch (err) {
      throw invalidArgument('spec', `is not valid JSON: ${(err as Error).message}`);
    }
  }
  const doc = parseDocument(text, { uniqueKeys: true });
  const first = doc.errors[0];
  if (first) {
    // The first line of a yaml error names the problem and its line and column.
    const line = (first.message.split('\n')[0] ?? first.message).replace(/:$/, '');
    throw invalidArgument('spec', `is not valid YAML: ${line}`);
  }
  return doc.toJS({ maxAliasCount: 100 }) as unknown;
}

/**
 * Validates the driver-agnostic fields of a spec; every issue names its field (`spec.retries.max:
 * must be <= 10`). The driver-specific parts are checked by the driver registry.
 */
export function parseJobSpec(raw: unknown): JobSpec {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw invalidArgument('spec', 'must be a mapping (YAML) or an object (JSON)');
  }
  return parseWith(JobSpecSchema, raw, { prefix: 'spec' });
}

/** The job's display name: its `name`, or its kind. */
export function jobDisplayName(spec: JobSpec): string {
  return spec.name ?? spec.kind;
}
