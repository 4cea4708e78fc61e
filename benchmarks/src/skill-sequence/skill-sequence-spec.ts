import { invalidArgument, parseWith } from '@troupe/proto';
import { z } from 'zod';
import { readSuiteTasksFile } from '../suite-tasks-file';

/** What scenario ids must match (they are parts of task ids, journal keys and sandbox ids). */
export const SCENARIO_ID_PATTERN = /^[a-z][a-z0-9_]{0,47}$/;

/** One task of a scenario: a seeded world and what to do in it. */
export const SequenceTaskSchema = z
  .object({
    /** `<scenario>_<n>`, numbered from 1 in order. */
    id: z.string().regex(/^[a-z][a-z0-9_]{0,47}_[1-9][0-9]{0,2}$/, 'must be <scenario>_<n>'),
    /** World seed: the world is a pure function of it. */
    seed: z
      .int()
      .min(0)
      .max(2 ** 31 - 1),
    instruction: z.string().min(1).max(8_000),
    /** Most actions for this task. @default the job's `config.agent.maxSteps` */
    maxSteps: z.int().min(1).max(200).optional(),
  })
  .strict();
/** One task of a scenario. */
export type SequenceTask = z.output<typeof SequenceTaskSchema>;

/** A scenario: tasks of one family of operations, visited in order by one continuing agent. */
export const ScenarioSchema = z
  .object({
    id: z.string().regex(SCENARIO_ID_PATTERN, 'must match ^[a-z][a-z0-9_]{0,47}$'),
    description: z.string().min(1).max(2_000),
    tasks: z.array(SequenceTaskSchema).min(1).max(50),
  })
  .strict()
  .superRefine((s, ctx) => {
    s.tasks.forEach((t, i) => {
      if (t.id !== `${s.id}_${i + 1}`) {
        ctx.addIssue({
          code: 'custom',
          path: ['tasks', i, 'id'],
          message: `must be ${s.id}_${i + 1} (tasks are numbered <scenario>_1.._N in order)`,
        });
      }
    });
  });
/** A scenario. */
export type Scenario = z.output<typeof ScenarioSchema>;

/** A suite's `tasks.yaml`. */
export const SequenceSuiteFileSchema = z
  .object({
    /**
     * Sandbox image: a `deploy/images` recipe name (`python-slim` → `troupe-python-slim:latest`)
     * or a full image reference. @default 'python-slim'
     */
    image: z.string().min(1).max(256).default('python-slim'),
    scenarios: z.array(ScenarioSchema).min(1).max(500),
  })
  .strict()
  .superRefine((f, ctx) => {
    const seen = new Map<string, number>();
    f.scenarios.forEach((s, i) => {
      const first = seen.get(s.id);
      if (first !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['scenarios', i, 'id'],
          message: `must be unique (scenarios[${first}] has it too)`,
        });
      }
      seen.set(s.id, i);
    });
  });
/** A suite's `tasks.yaml`. */
export type SequenceSuiteFile = z.output<typeof SequenceSuiteFileSchema>;

/** The agent of a `skill-sequence` job. */
export const SequenceAgentSchema = z
  .object({
    /** `gold` runs the task's solution, `none` does nothing, `model` is an LLM code agent. */
    kind: z.enum(['gold', 'none', 'model']),
    /** The cluster model (registry name) of a `model` agent. */
    model: z.string().min(1).optional(),
    /** Most actions (model replies) per task. @default 20 */
    maxSteps: z.int().min(1).max(200).default(20),
    /** Completion cap of one model call. @default the model's `maxTokens` */
    maxTokens: z.int().min(1).max(200_000).optional(),
  })
  .strict()
  .superRefine((a, ctx) => {
    if (a.kind === 'model' && a.model === undefined) {
      ctx.addIssue({ code: 'custom', path: ['model'], message: 'is required when kind is model' });
    }
    if (a.kind !== 'model' && a.model !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['model'], message: 'is only for kind model' });
    }
  });
/** The agent of a `skill-sequence` job. */
export type SequenceAgent = z.output<typeof SequenceAgentSchema>;

/** The skill library of a `skill-sequence` job. */
export const SequenceLibrarySchema = z
  .object({
    /** Whether tasks retrieve, check and admit skills. @default true */
    enabled: z.boolean().default(true),
    /** `always`, or `passed`: admit only functions of tasks the grader passed. @default 'passed' */
    admission: z.enum(['always', 'passed']).default('passed'),
    /**
     * Library id (jobs naming the same id share it). @default `job-<jobId>` (lower case)
     */
    id: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must match [a-z0-9][a-z0-9_-]{0,63}')
      .optional(),
    /** Most skills retrieved for a task. @default 8 */
    retrieveLimit: z.int().min(1).max(64).default(8),
  })
  .strict();

/** `config` of a `skill-sequence` job. */
export const SkillSequenceConfigSchema = z
  .object({
    agent: SequenceAgentSchema,
    library: SequenceLibrarySchema.default({
      enabled: true,
      admission: 'passed',
      retrieveLimit: 8,
    }),
    /** Run every scenario twice, without and with the library, side by side. @default false */
    ablation: z.boolean().default(false),
    /** Only these scenarios (ids of the suite). @default all */
    scenarios: z.array(z.string().regex(SCENARIO_ID_PATTERN, 'must be a scenario id')).optional(),
    /** Characters of an observation the agent sees; the rest is cut with a reminder. @default 3000 */
    observationChars: z.int().min(200).max(100_000).default(3_000),
    /** Time limit of one action in the REPL. @default 30 */
    execTimeoutS: z.int().min(1).max(600).default(30),
    /** Sandbox memory. @default 512 */
    memoryMb: z.int().min(128).max(16_384).default(512),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.ablation && !c.library.enabled) {
      ctx.addIssue({
        code: 'custom',
        path: ['ablation'],
        message: 'compares with and without the library: library.enabled must be true',
      });
    }
  });
/** `config` of a `skill-sequence` job, validated and defaulted. */
export type SkillSequenceConfig = z.output<typeof SkillSequenceConfigSchema>;

/** `tasks` of a `skill-sequence` job: a suite folder holding `tasks.yaml`, `world/`, `grader/`. */
export const SequenceSuiteRefSchema = z.object({ suite: z.string().min(1) }).strict();

/** What one coordinator task (one scenario) gets. */
export const ScenarioInputSchema = z
  .object({
    scenario: ScenarioSchema,
    /** The resolved sandbox image. */
    image: z.string().min(1),
    /** Absolute path of the suite folder (world and grader are read from it). */
    suiteDir: z.string().min(1),
    config: SkillSequenceConfigSchema,
  })
  .strict();
/** What one coordinator task gets. */
export type ScenarioInput = z.output<typeof ScenarioInputSchema>;

/** Largest `tasks.yaml`. */
export const MAX_SEQUENCE_TASKS_FILE_BYTES = 1024 * 1024;

/** A recipe name (`python-slim`) as its image (`troupe-python-slim:latest`); references pass. */
export function resolveSequenceImage(image: string): string {
  if (/^[a-z0-9][a-z0-9-]{0,62}$/.test(image) && !image.startsWith('troupe-')) {
    return `troupe-${image}:latest`;
  }
  return image;
}

/** A loaded suite: its folder and its validated `tasks.yaml`. */
export interface SequenceSuite {
  dir: string;
  file: SequenceSuiteFile;
}

/**
 * Loads `<suite>/tasks.yaml`, resolving `suite` against `baseDir`; errors name `field` and the
 * file.
 */
export async function loadSequenceSuite(
  suite: string,
  baseDir: string,
  field: string,
): Promise<SequenceSuite> {
  const { dir, raw, prefix } = await readSuiteTasksFile(
    suite,
    baseDir,
    field,
    MAX_SEQUENCE_TASKS_FILE_BYTES,
  );
  return { dir, file: parseWith(SequenceSuiteFileSchema, raw, { prefix }) };
}

/** The suite's scenarios a job runs: all, or the ones `config.scenarios` names (each must exist). */
export function selectScenarios(suite: SequenceSuiteFile, config: SkillSequenceConfig): Scenario[] {
  if (!config.scenarios) return suite.scenarios;
  const byId = new Map(suite.scenarios.map((s) => [s.id, s]));
  return config.scenarios.map((id, i) => {
    const s = byId.get(id);
    if (!s) {
      throw invalidArgument(
        `spec.config.scenarios[${i}]`,
        `must be a scenario of the suite (${[...byId.keys()].join(', ')})`,
        id,
      );
    }
    return s;
  });
}
