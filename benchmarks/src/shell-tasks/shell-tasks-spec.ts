import {
  MAX_INLINE_TASKS,
  MAX_TASKS_PER_JOB,
  TASK_ID_PATTERN,
  TASK_ID_RULE,
} from '@troupe/coordinator';
import { NamePattern } from '@troupe/proto';
import { z } from 'zod';

/** Default image of shell tasks (built offline by `deploy/images/build.sh busybox`). */
export const DEFAULT_SHELL_IMAGE = 'troupe-busybox:latest';

const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const FILE_PATH = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;

const EnvSchema = z.record(
  z.string().regex(ENV_KEY, { error: 'env keys must match [A-Za-z_][A-Za-z0-9_]{0,127}' }),
  z.string({ error: 'env values must be strings' }),
  { error: 'must be a mapping of strings' },
);

/** A command: a string run with `/bin/sh -c`, or an argv list run directly. */
export const ShellCommandSchema = z.union(
  [
    z.string().min(1, { error: 'must not be empty' }).max(65_536),
    z
      .array(z.string({ error: 'argv entries must be strings' }))
      .min(1, { error: 'must have at least one element' })
      .max(1_024),
  ],
  { error: 'must be a string (run with /bin/sh -c) or a list of strings (argv)' },
);

/** Sandbox settings shared by every task of the job (`spec.config`). */
export const ShellTasksConfigSchema = z
  .object({
    /** Image to run the commands in. @default troupe-busybox:latest */
    image: z
      .string()
      .min(1, { error: 'must not be empty' })
      .max(256, { error: 'must be at most 256 characters' })
      .regex(NamePattern.IMAGE_REF, { error: 'must be a Docker image reference' })
      .default(DEFAULT_SHELL_IMAGE),
    /** Memory limit of each sandbox. @default 256 */
    memoryMb: z
      .number({ error: 'must be a number' })
      .int({ error: 'must be an integer' })
      .min(16, { error: 'must be >= 16' })
      .max(262_144, { error: 'must be <= 262144' })
      .default(256),
    /** CPU limit of each sandbox (cores). @default 1 */
    cpus: z
      .number({ error: 'must be a number' })
      .min(0.01, { error: 'must be >= 0.01' })
      .max(256, { error: 'must be <= 256' })
      .default(1),
    /** Give the sandboxes a network (a recorded policy exception). @default false */
    network: z.boolean({ error: 'must be a boolean' }).default(false),
    /** Environment of every command. @default {} */
    env: EnvSchema.default(() => ({})),
    /**
     * Secret-looking env keys (`*_TOKEN`, `*_API_KEY`, …) allowed anyway, in `env` or a task's
     * `env`; each is a recorded policy exception of the sandbox. @default []
     */
    allowSecretEnvKeys: z
      .array(z.string().regex(ENV_KEY, { error: 'must match [A-Za-z_][A-Za-z0-9_]{0,127}' }))
      .max(64, { error: 'at most 64 keys' })
      .default(() => []),
    /** Keep each task's output as an artifact (`output.log`). @default true */
    saveOutput: z.boolean({ error: 'must be a boolean' }).default(true),
  })
  .strict();
/** Validated `spec.config` of a shell-tasks job. */
export type ShellTasksConfig = z.output<typeof ShellTasksConfigSchema>;

/** One shell task. */
export const ShellTaskSchema = z
  .object({
    /** Unique task id. */
    id: z.string({ error: 'must be a string' }).regex(TASK_ID_PATTERN, { error: TASK_ID_RULE }),
    /** What to run. */
    command: ShellCommandSchema,
    /** Exit code that counts as passing. @default 0 */
    expectExitCode: z
      .number({ error: 'must be a number' })
      .int({ error: 'must be an integer' })
      .min(0, { error: 'must be >= 0' })
      .max(255, { error: 'must be <= 255' })
      .default(0),
    /** Files written into the workspace before the command runs (relative path → text). */
    files: z
      .record(
        z.string().regex(FILE_PATH, { error: 'file paths must be relative, without . or ..' }),
        z.string({ error: 'file contents must be strings' }),
        { error: 'must be a mapping of path to text' },
      )
      .refine(
        (f) => Object.keys(f).every((p) => !p.split('/').some((s) => s === '.' || s === '..')),
        {
          error: 'file paths must not contain . or .. segments',
        },
      )
      .optional(),
    /** Extra environment of this task's command. */
    env: EnvSchema.optional(),
    /** Working directory, absolute (inside the sandbox). @default the workspace */
    cwd: z
      .string()
      .regex(/^\/[^\0]*$/, { error: 'must be an absolute path (e.g. /workspace/sub)' })
      .optional(),
    /** Time limit of the command (capped by the job's `taskTimeoutMs`). */
    timeoutMs: z
      .number({ error: 'must be a number' })
      .int({ error: 'must be an integer' })
      .min(100, { error: 'must be >= 100' })
      .optional(),
    /** Image of this task. @default config.image */
    image: z
      .string()
      .max(256, { error: 'must be at most 256 characters' })
      .regex(NamePattern.IMAGE_REF, { error: 'must be a Docker image reference' })
      .optional(),
  })
  .strict();
/** One validated shell task. */
export type ShellTask = z.output<typeof ShellTaskSchema>;

/** `count` copies of one command, with ids `<idPrefix><n>` (smoke and load runs). */
export const ShellTaskGeneratorSchema = z
  .object({
    /** How many tasks. */
    count: z
      .number({ error: 'must be a number' })
      .int({ error: 'must be an integer' })
      .min(1, { error: 'must be >= 1' })
      .max(MAX_TASKS_PER_JOB, {
        error: `must be <= ${MAX_TASKS_PER_JOB} (a job holds at most ${MAX_TASKS_PER_JOB} tasks)`,
      }),
    /** The command every task runs; `{i}` is replaced by the task number (0-based). */
    command: ShellCommandSchema,
    /** Task id prefix. @default 't' */
    idPrefix: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, {
        error: 'must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}',
      })
      .default('t'),
    expectExitCode: z.number().int().min(0).max(255).default(0),
    timeoutMs: z.number().int().min(100).optional(),
  })
  .strict();

/** `spec.tasks` as a list (ids checked for uniqueness by the driver). */
export const ShellTaskListSchema = z.array(ShellTaskSchema).max(MAX_INLINE_TASKS, {
  error: `at most ${MAX_INLINE_TASKS} tasks inline (generate more with {count, command})`,
});

/** What a task actor receives as the task's input. */
export const ShellTaskInputSchema = z.object({
  task: ShellTaskSchema,
  config: ShellTasksConfigSchema,
});
/** Input of one shell task. */
export type ShellTaskInput = z.output<typeof ShellTaskInputSchema>;
