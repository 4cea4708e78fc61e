import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  errorCode,
  invalidArgument,
  isTroupeError,
  parseUntrustedTextAsync,
  readUntrustedTextFile,
  TroupeError,
} from '@troupe/proto';
import { TASK_ID_PATTERN } from '@troupe/coordinator';
import {
  type InvalidIssueTask,
  IssueTaskFileSchema,
  type LoadedIssueTask,
} from './issue-task-spec';
import { loadSweBenchSuite, readPredictions, SWE_BENCH_INSTANCES } from './swe-bench-suite';
import { DEFAULT_MAX_TASK_MB, scanTaskTrees } from './task-payload';
import { parsePatch } from './unified-patch';
import { pathKind } from '../path-kind';

export { DEFAULT_MAX_TASK_MB };
/** The grader's entry point, relative to a task folder. */
export const GRADER_ENTRY = 'grader/run-tests.sh';

/** A suite read from disk: the valid tasks, and the invalid ones with the reason. */
export interface IssueSuite {
  /** Absolute suite folder. */
  suiteDir: string;
  /** Valid tasks, in folder-name order. */
  tasks: LoadedIssueTask[];
  /** Task folders whose task.yaml (or layout) broke a rule, in folder-name order. */
  invalid: InvalidIssueTask[];
}

/** Largest task.yaml read (its instruction is at most 64 KiB). */
export const MAX_TASK_FILE_BYTES = 256 * 1024;

/**
 * A valid task id naming a task folder whose own name is not one (`my task` → `my-task`), so an
 * invalid task can still be planned and reported.
 */
export function safeTaskId(folder: string): string {
  if (TASK_ID_PATTERN.test(folder)) return folder;
  const cleaned = folder.replace(/[^A-Za-z0-9._-]/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  return (cleaned === '' ? 'task' : cleaned).slice(0, 120);
}

/** Options of {@link loadIssueTask} and {@link loadIssueSuite}. */
export interface LoadIssueTaskOptions {
  /** A task whose files hold more is invalid, naming `config.maxTaskMb`. @default 256 */
  maxTaskMb?: number;
}

/**
 * Reads one task folder. Returns the loaded task, or why it is invalid (`field` names the
 * task.yaml field or the file that broke a rule). Files are read asynchronously and a large
 * task.yaml is parsed in a worker thread: a job's validation runs on the coordinator's loop.
 */
export async function loadIssueTask(
  taskDir: string,
  options: LoadIssueTaskOptions = {},
): Promise<LoadedIssueTask | InvalidIssueTask> {
  const folder = path.basename(taskDir);
  const bad = (field: string, rule: string): InvalidIssueTask => ({
    taskId: safeTaskId(folder),
    field,
    rule,
  });
  let text: string;
  try {
    text = await readUntrustedTextFile(path.join(taskDir, 'task.yaml'), {
      field: 'task.yaml',
      maxBytes: MAX_TASK_FILE_BYTES,
    });
  } catch (err) {
    if (isTroupeError(err)) {
      const rule = err.details?.['rule'];
      return bad('task.yaml', typeof rule === 'string' ? rule : err.message);
    }
    return bad('task.yaml', 'must exist and be readable');
  }
  let raw: unknown;
  try {
    raw = await parseUntrustedTextAsync(text, {
      field: 'task.yaml',
      maxBytes: MAX_TASK_FILE_BYTES,
    });
  } catch (err) {
    // Syntax, undefined or excessive aliases, size, depth: this task is invalid, the rest runs.
    if (!(err instanceof TroupeError) || errorCode(err) !== 'INVALID_ARGUMENT') throw err;
    const rule = typeof err.details?.['rule'] === 'string' ? err.details['rule'] : err.message;
    return bad('task.yaml', rule);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return bad('task.yaml', 'must be a mapping');
  }
  const parsed = IssueTaskFileSchema.safeParse(raw);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const field = first && first.path.length > 0 ? first.path.map(String).join('.') : 'task.yaml';
    // A task is reported under the id its task.yaml gives when that id is valid: an invalid one
    // (the very error being reported) would fail the job's plan.
    const id = (raw as { id?: unknown }).id;
    return {
      taskId: typeof id === 'string' && TASK_ID_PATTERN.test(id) ? id : safeTaskId(folder),
      field,
      rule: first?.message ?? 'invalid',
    };
  }
  const task = parsed.data;
  if (task.id !== folder) return bad('id', `must equal the task's folder name (${folder})`);
  if ((await pathKind(path.join(taskDir, 'repo'))) !== 'folder') {
    return bad('repo/', 'must be a folder (the repository the agent works on)');
  }
  if ((await pathKind(path.join(taskDir, GRADER_ENTRY))) === undefined) {
    return bad(GRADER_ENTRY, 'must exist (the hidden grader)');
  }
  let solutionPatch: string | undefined;
  const patchFile = path.join(taskDir, 'solution.patch');
  if ((await pathKind(patchFile)) !== undefined) {
    solutionPatch = await readFile(patchFile, 'utf8');
    try {
      parsePatch(solutionPatch);
    } catch (err) {
      return bad('solution.patch', `must be a unified diff: ${(err as Error).message}`);
    }
  }
  const trees = await scanTaskTrees(
    { repo: path.join(taskDir, 'repo'), grader: path.join(taskDir, 'grader') },
    Buffer.byteLength(solutionPatch ?? ''),
    options.maxTaskMb,
  );
  if ('rule' in trees) return bad(trees.field, trees.rule);
  const { repo, grader, bytes } = trees;
  return {
    task,
    dir: path.resolve(taskDir),
    repo,
    grader,
    ...(solutionPatch !== undefined ? { solutionPatch } : {}),
    bytes,
  };
}

/**
 * Reads a suite: every sub-folder holding a task.yaml (or listed in `include`) is a task. A
 * missing suite folder or an `include` naming no folder is an `INVALID_ARGUMENT` on `field`; an
 * invalid task is returned in `invalid`, so the rest of the suite still runs.
 */
export async function loadIssueSuite(
  suite: string,
  field: string,
  options: {
    include?: readonly string[];
    cwd?: string;
    predictions?: string;
  } & LoadIssueTaskOptions = {},
): Promise<IssueSuite> {
  const suiteDir = path.resolve(options.cwd ?? process.cwd(), suite);
  if ((await pathKind(suiteDir)) !== 'folder') {
    throw invalidArgument(`${field}.suite`, `must be a suite folder (no ${suiteDir})`, suite);
  }
  if ((await pathKind(path.join(suiteDir, SWE_BENCH_INSTANCES))) !== undefined) {
    const predictions =
      options.predictions === undefined
        ? undefined
        : await readPredictions(
            path.resolve(options.cwd ?? process.cwd(), options.predictions),
            `${field}.predictions`,
          );
    return {
      suiteDir,
      ...(await loadSweBenchSuite(suiteDir, field, {
        ...(options.maxTaskMb !== undefined ? { maxTaskMb: options.maxTaskMb } : {}),
        ...(options.include ? { include: options.include } : {}),
        ...(predictions ? { predictions } : {}),
      })),
    };
  }
  const folders: string[] = [];
  for (const e of await readdir(suiteDir, { withFileTypes: true })) {
    if (
      e.isDirectory() &&
      (await pathKind(path.join(suiteDir, e.name, 'task.yaml'))) !== undefined
    ) {
      folders.push(e.name);
    }
  }
  folders.sort();
  let chosen = folders;
  if (options.include) {
    for (const [i, id] of options.include.entries()) {
      if ((await pathKind(path.join(suiteDir, id))) === undefined) {
        throw invalidArgument(`${field}.include[${i}]`, `names no task folder of ${suiteDir}`, id);
      }
    }
    chosen = [...new Set(options.include)];
  }
  if (chosen.length === 0) {
    throw invalidArgument(
      `${field}.suite`,
      `must hold task folders with a task.yaml (${suiteDir})`,
    );
  }
  const tasks: LoadedIssueTask[] = [];
  const invalid: InvalidIssueTask[] = [];
  for (const folder of chosen) {
    const loaded = await loadIssueTask(path.join(suiteDir, folder), options);
    if ('rule' in loaded) invalid.push(loaded);
    else tasks.push(loaded);
  }
  return { suiteDir, tasks, invalid };
}
