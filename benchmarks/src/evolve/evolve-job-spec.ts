import {
  EvolveLimitsSchema,
  EvolveOptionsSchema,
  ProgramSchema,
  SearchTaskSpecSchema,
} from '@troupe/evolve';
import { TASK_ID_PATTERN, TASK_ID_RULE } from '@troupe/coordinator';
import { z } from 'zod';

/** Default number of evaluator sandboxes a search task keeps (`spec.config.evaluatorSlots`). */
export const DEFAULT_EVALUATOR_SLOTS = 2;

/**
 * The fields of `schema`, each optional and without its default: an override lists only what it
 * sets, so the suite's value stays for everything else (a `.partial()` of a schema with defaults
 * would fill every default in and silently replace the suite's values).
 */
function overridesOf<S extends z.ZodRawShape>(schema: z.ZodObject<S>) {
  const shape: Record<string, z.ZodType> = {};
  for (const [key, field] of Object.entries(schema.shape) as [string, z.ZodType][]) {
    const inner = field instanceof z.ZodDefault ? (field.unwrap() as z.ZodType) : field;
    shape[key] = inner.optional();
  }
  return z.object(shape).strict() as unknown as z.ZodObject<{
    [K in keyof S]: z.ZodOptional<S[K]>;
  }>;
}

/**
 * Search options a job may override (everything a suite's `search:` may hold). Strict, so a
 * misspelt option is an error naming it; only the options given replace the suite's.
 */
export const EvolveSearchOverridesSchema = overridesOf(
  EvolveOptionsSchema.omit({ direction: true, description: true, limits: true }),
);

/** One search task of an `evolve` job (`spec.tasks[i]`). */
export const EvolveTaskSchema = z
  .object({
    /** Unique task id. */
    id: z.string({ error: 'must be a string' }).regex(TASK_ID_PATTERN, { error: TASK_ID_RULE }),
    /**
     * Suite folder (holding `task.yaml`): absolute, or relative to the working directory of the
     * process that validates and plans the job (the coordinator; `troupe run` starts it in the
     * directory it is run from).
     */
    suite: z
      .string({ error: 'must be a string (a suite folder)' })
      .min(1, { error: 'must not be empty' }),
    /** Limits on top of the suite's (`limits:` of its task.yaml). @default the suite's */
    limits: overridesOf(EvolveLimitsSchema).optional(),
    /** Search options on top of the suite's (`search:`), e.g. `seed`, `islands`. @default the suite's */
    search: EvolveSearchOverridesSchema.optional(),
  })
  .strict();
/** One validated search task of a job. */
export type EvolveTask = z.output<typeof EvolveTaskSchema>;

/** `spec.tasks` of an `evolve` job (ids checked for uniqueness by the driver). */
export const EvolveTaskListSchema = z
  .array(EvolveTaskSchema, { error: 'must be a list of search tasks ({id, suite})' })
  .min(1, { error: 'must list at least one search task' })
  .max(1_000, { error: 'at most 1000 search tasks' });

/** Driver options of an `evolve` job (`spec.config`). */
export const EvolveJobConfigSchema = z
  .object({
    /**
     * Evaluations running at once per task, each in its own reused sandbox.
     * @default the driver's `evaluatorSlots` option, else 2
     */
    evaluatorSlots: z
      .number({ error: 'must be a number' })
      .int({ error: 'must be an integer' })
      .min(1, { error: 'must be >= 1' })
      .max(64, { error: 'must be <= 64' })
      .optional(),
    /** CPU limit of each evaluator sandbox (cores). @default 1 */
    evaluatorCpus: z
      .number({ error: 'must be a number' })
      .min(0.1, { error: 'must be >= 0.1' })
      .max(64, { error: 'must be <= 64' })
      .default(1),
    /** Keep the whole journal as the artifact `journal.jsonl`. @default true */
    saveJournal: z.boolean({ error: 'must be a boolean' }).default(true),
  })
  .strict();
/** Validated `spec.config` of an `evolve` job. */
export type EvolveJobConfig = z.output<typeof EvolveJobConfigSchema>;

/**
 * What a task actor receives: the task, the job's config, and the suite as it was when the job
 * was planned (spec, seeds and every file a phase ships, base64), so any host can run it.
 */
export const EvolveTaskInputSchema = z
  .object({
    task: EvolveTaskSchema,
    config: EvolveJobConfigSchema,
    /** Absolute suite folder at planning time (for reports only). */
    suiteDir: z.string(),
    suite: SearchTaskSpecSchema,
    seeds: z.array(ProgramSchema).min(1),
    /** Suite-relative path → base64 content, for every file of either phase. */
    files: z.record(z.string(), z.string()),
  })
  .strict();
/** Input of one `evolve` task. */
export type EvolveTaskInput = z.output<typeof EvolveTaskInputSchema>;
