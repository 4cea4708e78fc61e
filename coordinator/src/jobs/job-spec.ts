import {
  invalidArgument,
  parseUntrustedText,
  parseUntrustedTextAsync,
  parseWith,
} from '@troupe/proto';
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

/** Deepest nesting of mappings and lists a spec may have. */
export const MAX_SPEC_DEPTH = 32;
/** Most YAML alias expansions a spec may use. */
export const MAX_SPEC_ALIASES = 100;
/**
 * Default largest spec, in bytes of its text and of its JSON form: half of NATS' default
 * `max_payload` (1 MiB), because the spec is stored whole in one KV value (the job record) and in
 * the job actor's state next to its task table. The job manager derives the limit from the
 * server's actual `max_payload` ({@link maxSpecBytesFor}).
 */
export const DEFAULT_MAX_SPEC_BYTES = 512 * 1024;

/** The largest spec a NATS server with this `max_payload` can store: half of it. */
export function maxSpecBytesFor(maxPayload: number | undefined): number {
  return maxPayload === undefined ? DEFAULT_MAX_SPEC_BYTES : Math.floor(maxPayload / 2);
}

/**
 * Parses a spec document (YAML — a superset of JSON — or strict JSON) into a plain value, with
 * bounded cost: at most `maxBytes` bytes, {@link MAX_SPEC_DEPTH} levels of nesting and
 * {@link MAX_SPEC_ALIASES} alias expansions, checked before the document is parsed. Syntax errors
 * (with line and column), undefined aliases and broken limits become `INVALID_ARGUMENT` on field
 * `spec` naming the rule.
 */
export function parseSpecText(
  text: string,
  format: SpecTextFormat = 'auto',
  maxBytes: number = DEFAULT_MAX_SPEC_BYTES,
): unknown {
  if (text.trim() === '')
    throw invalidArgument('spec', 'must be a non-empty YAML or JSON document');
  return parseUntrustedText(text, {
    field: 'spec',
    format: format === 'json' ? 'json' : 'yaml',
    maxBytes,
    maxDepth: MAX_SPEC_DEPTH,
    maxAliases: MAX_SPEC_ALIASES,
  });
}

/**
 * {@link parseSpecText} without holding the event loop: a large document is parsed in a worker
 * thread (`parseUntrustedTextAsync`), with the same limits and the same errors on field `spec`.
 * What `JobManager.submit` uses.
 */
export async function parseSpecTextAsync(
  text: string,
  format: SpecTextFormat = 'auto',
  maxBytes: number = DEFAULT_MAX_SPEC_BYTES,
  signal?: AbortSignal,
): Promise<unknown> {
  if (text.trim() === '')
    throw invalidArgument('spec', 'must be a non-empty YAML or JSON document');
  return parseUntrustedTextAsync(text, {
    field: 'spec',
    format: format === 'json' ? 'json' : 'yaml',
    maxBytes,
    maxDepth: MAX_SPEC_DEPTH,
    maxAliases: MAX_SPEC_ALIASES,
    ...(signal ? { signal } : {}),
  });
}

/**
 * Refuses a validated spec whose JSON form (what is stored) is larger than `maxBytes`, naming the
 * limit.
 */
export function checkSpecSize(spec: JobSpec, maxBytes: number = DEFAULT_MAX_SPEC_BYTES): void {
  const bytes = Buffer.byteLength(JSON.stringify(spec), 'utf8');
  if (bytes > maxBytes) {
    throw invalidArgument(
      'spec',
      `must be at most ${maxBytes} bytes as JSON (got ${bytes}): a spec is stored whole in one NATS message (half the server's max_payload); keep large task data in files the driver reads (a suite folder)`,
    );
  }
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
