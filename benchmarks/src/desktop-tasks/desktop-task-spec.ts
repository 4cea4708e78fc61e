import { invalidArgument, parseWith } from '@troupe/proto';
import { checkTaskCount } from '@troupe/coordinator';
import { z } from 'zod';
import { readSuiteTasksFile } from '../suite-tasks-file';

/** One setup step, run before the agent starts (OSWorld's `config`). */
export const SetupStepSchema = z.union([
  /** Files written under the home directory (text). */
  z.object({ files: z.record(z.string().min(1), z.string()) }).strict(),
  /** A command run as the desktop user; must exit 0. */
  z.object({ command: z.string().min(1) }).strict(),
  /** An application started detached, waited for until a window title matches `waitTitle`. */
  z
    .object({
      launch: z.union([z.string().min(1), z.array(z.string()).min(1)]),
      waitTitle: z.string().min(1).optional(),
    })
    .strict(),
]);
/** One setup step. */
export type SetupStep = z.output<typeof SetupStepSchema>;

/** Where an evaluator reads machine state from. */
export const GetterSchema = z.discriminatedUnion('type', [
  /** A file's text (missing: the empty string). */
  z.object({ type: z.literal('file'), path: z.string().min(1) }).strict(),
  /** A command's stdout. */
  z.object({ type: z.literal('command'), command: z.string().min(1) }).strict(),
  /** A spreadsheet cell, read with `ssconvert` (any format Gnumeric opens). */
  z
    .object({
      type: z.literal('cell'),
      path: z.string().min(1),
      cell: z.string().regex(/^[A-Z]{1,2}[1-9][0-9]{0,4}$/, 'must be a cell like B7'),
    })
    .strict(),
  /** A key of an INI-style config file (`[section]` / `key=value`, e.g. the GSettings keyfile). */
  z
    .object({
      type: z.literal('config'),
      path: z.string().min(1),
      section: z.string().min(1),
      key: z.string().min(1),
    })
    .strict(),
  /** The focused window's title (or all titles, one a line, with `all: true`). */
  z.object({ type: z.literal('windows'), all: z.boolean().default(false) }).strict(),
  /** Nothing: infeasible tasks are judged on the agent's final action. */
  z.object({ type: z.literal('none') }).strict(),
]);
/** An evaluator's getter. */
export type Getter = z.output<typeof GetterSchema>;

/** How the value a getter read is scored, in [0, 1]. */
export const MetricSchema = z.discriminatedUnion('type', [
  /** 1 when equal to `expected` (both trimmed unless `trim: false`). */
  z
    .object({ type: z.literal('exact'), expected: z.string(), trim: z.boolean().default(true) })
    .strict(),
  /** 1 when every string of `expected` occurs in the value. */
  z.object({ type: z.literal('contains'), expected: z.array(z.string()).min(1) }).strict(),
  /** 1 when the value matches the regular expression. */
  z.object({ type: z.literal('regex'), pattern: z.string().min(1) }).strict(),
  /** 1 when the value is a number within `tolerance` of `expected`. */
  z
    .object({
      type: z.literal('number'),
      expected: z.number(),
      tolerance: z.number().min(0).default(1e-9),
    })
    .strict(),
  /** 1 when the agent's last action was `FAIL` (the task cannot be done). */
  z.object({ type: z.literal('infeasible') }).strict(),
]);
/** An evaluator's metric. */
export type Metric = z.output<typeof MetricSchema>;

/** A `computer_13` action or, where the task allows commands, `{run_command}`. */
export const ScriptStepSchema = z.union([
  z.object({ run_command: z.string().min(1) }).strict(),
  z.looseObject({ action_type: z.string() }),
]);
/** One step of a gold script. */
export type ScriptStep = z.output<typeof ScriptStepSchema>;

/** A desktop task (OSWorld's task format in spirit). */
export const DesktopTaskSchema = z
  .object({
    id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must match [A-Za-z0-9_-]{1,64}'),
    instruction: z.string().min(1),
    /** Whether the agent may use `run_command` (otherwise only the mouse and keyboard). */
    allowCommands: z.boolean().default(false),
    setup: z.array(SetupStepSchema).default([]),
    evaluator: z
      .object({
        getter: GetterSchema,
        metric: MetricSchema,
        /**
         * Re-read for up to this long until the metric passes (applications saving late, or
         * starting late: a first Mousepad start in a TCG guest on a busy host takes 20 s+).
         */
        settleMs: z.int().min(0).max(120_000).default(2_000),
      })
      .strict(),
    /** The reference solution: actions the `gold` agent replays. */
    gold: z.array(ScriptStepSchema).min(1),
  })
  .strict();
/** A desktop task. */
export type DesktopTask = z.output<typeof DesktopTaskSchema>;

/** The agent of a `desktop-tasks` job. */
export const DesktopAgentSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('gold') }).strict(),
  z.object({ kind: z.literal('none') }).strict(),
  z
    .object({
      kind: z.literal('model'),
      /** Model id sent to the provider. */
      model: z.string().min(1),
      /** Most model turns. @default 15 */
      maxSteps: z.int().min(1).max(200).default(15),
    })
    .strict(),
]);

/** `config` of a `desktop-tasks` job. */
export const DesktopTasksConfigSchema = z
  .object({
    agent: DesktopAgentSchema,
    /**
     * Environment kind: `desktop` (Docker) or `vm` (QEMU guest; placed only on hosts that
     * advertise `vm`). @default 'desktop'
     */
    kind: z.enum(['desktop', 'vm']).default('desktop'),
    /** Environment image (for `vm`, `troupe-desktop:latest` names the `vm-desktop` image). @default 'troupe-desktop:latest' */
    image: z.string().min(1).default('troupe-desktop:latest'),
    width: z.int().min(320).max(3840).default(1280),
    height: z.int().min(240).max(2160).default(800),
    memoryMb: z.int().min(256).default(1024),
    /** Store a screenshot after every step (and a thumbnail link in the report). @default true */
    screenshots: z.boolean().default(true),
  })
  .strict();
/** `config` of a `desktop-tasks` job. */
export type DesktopTasksConfig = z.output<typeof DesktopTasksConfigSchema>;

/** What a task's execution gets. */
export const DesktopTaskInputSchema = z.object({
  task: DesktopTaskSchema,
  config: DesktopTasksConfigSchema,
});
/** What a task's execution gets. */
export type DesktopTaskInput = z.output<typeof DesktopTaskInputSchema>;

/** `tasks` of a `desktop-tasks` job: a suite folder holding `tasks.yaml`. */
export const DesktopSuiteRefSchema = z.object({ suite: z.string().min(1) }).strict();

/** Largest `tasks.yaml` of a desktop suite (2,000 tasks of half a KiB each). */
export const MAX_DESKTOP_TASKS_FILE_BYTES = 1024 * 1024;

/**
 * Loads `<suite>/tasks.yaml` (a list of tasks), resolving `suite` against `baseDir`. The file is
 * read asynchronously and a large one parsed in a worker thread, so a job's validation does not
 * hold the coordinator's event loop.
 */
export async function loadDesktopSuite(
  suite: string,
  baseDir: string,
  field: string,
): Promise<DesktopTask[]> {
  const { raw, prefix } = await readSuiteTasksFile(
    suite,
    baseDir,
    field,
    MAX_DESKTOP_TASKS_FILE_BYTES,
  );
  checkTaskCount(raw, prefix);
  const tasks = parseWith(z.array(DesktopTaskSchema).min(1), raw, { prefix });
  const seen = new Set<string>();
  tasks.forEach((t, i) => {
    if (seen.has(t.id)) throw invalidArgument(`${field}[${i}].id`, 'must be unique', t.id);
    seen.add(t.id);
  });
  return tasks;
}
