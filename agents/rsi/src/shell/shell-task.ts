import { NamePattern, parseWith } from '@troupe/proto';
import { z } from 'zod';

/** The image RSI shell tasks run in unless they name another (built from deploy/images/busybox). */
export const DEFAULT_SHELL_TASK_IMAGE = 'troupe-busybox:latest';

/**
 * A path relative to the sandbox workspace: `/`-separated segments, no empty, `.` or `..`
 * segment, no leading `/`, no `\` or control character.
 */
export function workspacePathRule(path: string): string | undefined {
  if (path.length === 0) return 'must not be empty';
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(path)) return 'must not contain control characters';
  if (path.startsWith('/')) return 'must be relative to the workspace, not absolute';
  if (path.includes('\\')) return 'must use "/" as separator, never "\\"';
  if (path.length > 1024) return 'must be at most 1024 characters';
  for (const segment of path.split('/')) {
    if (segment === '') return 'must not have empty segments (leading, trailing or double "/")';
    if (segment === '..') return 'must not contain ".." segments';
    if (segment === '.') return 'must not contain "." segments';
  }
  return undefined;
}

/** Workspace-relative path → text, each key checked so the message names it and its rule. */
const WorkspaceFilesSchema = z.record(z.string(), z.string()).superRefine((files, ctx) => {
  for (const path of Object.keys(files)) {
    const rule = workspacePathRule(path);
    if (rule !== undefined) ctx.addIssue({ code: 'custom', path: [path], message: rule });
  }
});

/** Step and time limits of one RSI shell task's roles and sandboxes. */
export const ShellTaskLimitsSchema = z.strictObject({
  /** Model calls per Actor run (the work, and separately its lesson proposal). @default 30 */
  actorMaxSteps: z.int().min(1).max(1_000).default(30),
  /** Model calls per Verifier run. @default 15 */
  verifierMaxSteps: z.int().min(1).max(1_000).default(15),
  /** Model calls per Curriculum turn. @default 5 */
  curriculumMaxSteps: z.int().min(1).max(1_000).default(5),
  /** Wall time of one role run. @default 600000 (10 minutes) */
  runWallMs: z.int().min(1_000).max(86_400_000).default(600_000),
  /** Memory of a sandbox (the bank and proposal tmpfs count against it). @default 512 */
  memoryMb: z.int().min(64).max(65_536).default(512),
  /** Time the official evaluator command may take (Phase-3 scoring). @default 120000 */
  evaluatorTimeoutMs: z.int().min(1_000).max(3_600_000).default(120_000),
});

/**
 * An RSI shell task. `evaluator` is the official check (a shell command run in the workspace,
 * exit 0 = pass) used only for Phase-3 scoring: no role ever sees it, no prompt contains it.
 */
export const ShellTaskSchema = z.strictObject({
  /** Task id, `[A-Za-z0-9_.-]{1,128}`. */
  id: z.string().regex(/^[A-Za-z0-9_.-]{1,128}$/, 'must match [A-Za-z0-9_.-]{1,128}'),
  /** What the Actor is asked to do (and the Verifier judges). */
  instruction: z.string().min(1, 'must not be empty').max(100_000),
  /** The workspace before the Actor starts. @default no files */
  setup: z
    .strictObject({
      /** Workspace-relative path → text written into the workspace. @default {} */
      files: WorkspaceFilesSchema.default({}),
    })
    .default({ files: {} }),
  /** Official check for Phase-3 scoring: a shell command, exit 0 = pass. Never shown to a role. */
  evaluator: z.string().min(1, 'must not be empty').max(100_000),
  /** Sandbox image. @default {@link DEFAULT_SHELL_TASK_IMAGE} */
  image: z
    .string()
    .max(256, 'must be a Docker image reference')
    .regex(NamePattern.IMAGE_REF, 'must be a Docker image reference')
    .default(DEFAULT_SHELL_TASK_IMAGE),
  /** Limits (see {@link ShellTaskLimitsSchema}). @default every limit's default */
  limits: ShellTaskLimitsSchema.default(ShellTaskLimitsSchema.parse({})),
});

/** A task as written in a suite. */
export type ShellTaskInput = z.input<typeof ShellTaskSchema>;
/** A validated task, defaults filled in. */
export type ShellTask = z.output<typeof ShellTaskSchema>;

/**
 * Validates an RSI shell task.
 * @throws TroupeError `INVALID_ARGUMENT` naming every field and rule broken (`task.setup.files…`)
 */
export function parseShellTask(input: unknown, prefix = 'task'): ShellTask {
  return parseWith(ShellTaskSchema, input, { prefix });
}
