import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { invalidArgument } from '@troupe/proto';
import { parseDocument } from 'yaml';
import {
  type InvalidIssueTask,
  IssueTaskFileSchema,
  type LoadedIssueTask,
} from './issue-task-spec';
import { loadSweBenchSuite, readPredictions, SWE_BENCH_INSTANCES } from './swe-bench-suite';
import { parsePatch } from './unified-patch';

/** Largest task (repo, grader and patch) a job may ship to its task actors. */
export const MAX_TASK_BYTES = 4 * 1024 * 1024;
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

type FileMap = LoadedIssueTask['repo'];

/** Reads every file under `dir` (skipping caches and dot files) as `{base64, mode}`. */
export function readTree(dir: string, budget: { bytes: number }): FileMap {
  const out: FileMap = {};
  const walk = (rel: string): void => {
    const abs = path.join(dir, rel);
    for (const entry of readdirSync(abs, { withFileTypes: true }).sort((a, b) =>
      a.name < b.name ? -1 : 1,
    )) {
      if (entry.name === '__pycache__' || entry.name === 'node_modules') continue;
      const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) walk(childRel);
      else if (entry.isFile()) {
        const full = path.join(dir, childRel);
        const content = readFileSync(full);
        budget.bytes += content.length;
        if (budget.bytes > MAX_TASK_BYTES) {
          throw new Error(`the task's files exceed ${MAX_TASK_BYTES} bytes`);
        }
        out[childRel] = {
          base64: content.toString('base64'),
          mode: statSync(full).mode & 0o111 ? 0o755 : 0o644,
        };
      }
    }
  };
  walk('');
  return out;
}

function digestOf(parts: readonly unknown[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

/**
 * Reads one task folder. Returns the loaded task, or why it is invalid (`field` names the
 * task.yaml field or the file that broke a rule).
 */
export function loadIssueTask(taskDir: string): LoadedIssueTask | InvalidIssueTask {
  const folder = path.basename(taskDir);
  const bad = (field: string, rule: string): InvalidIssueTask => ({ taskId: folder, field, rule });
  let text: string;
  try {
    text = readFileSync(path.join(taskDir, 'task.yaml'), 'utf8');
  } catch {
    return bad('task.yaml', 'must exist and be readable');
  }
  const doc = parseDocument(text, { uniqueKeys: true });
  const syntax = doc.errors[0];
  if (syntax) {
    return bad('task.yaml', `must be valid YAML: ${syntax.message.split('\n')[0] ?? ''}`);
  }
  const raw: unknown = doc.toJS({ maxAliasCount: 100 });
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return bad('task.yaml', 'must be a mapping');
  }
  const parsed = IssueTaskFileSchema.safeParse(raw);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const field = first && first.path.length > 0 ? first.path.map(String).join('.') : 'task.yaml';
    const id = (raw as { id?: unknown }).id;
    return {
      taskId: typeof id === 'string' && id !== '' ? id : folder,
      field,
      rule: first?.message ?? 'invalid',
    };
  }
  const task = parsed.data;
  if (task.id !== folder) return bad('id', `must equal the task's folder name (${folder})`);
  if (
    !existsSync(path.join(taskDir, 'repo')) ||
    !statSync(path.join(taskDir, 'repo')).isDirectory()
  ) {
    return bad('repo/', 'must be a folder (the repository the agent works on)');
  }
  if (!existsSync(path.join(taskDir, GRADER_ENTRY))) {
    return bad(GRADER_ENTRY, 'must exist (the hidden grader)');
  }
  const budget = { bytes: 0 };
  let repo: FileMap;
  let grader: FileMap;
  try {
    repo = readTree(path.join(taskDir, 'repo'), budget);
    grader = readTree(path.join(taskDir, 'grader'), budget);
  } catch (err) {
    return bad('repo/', (err as Error).message);
  }
  let solutionPatch: string | undefined;
  const patchFile = path.join(taskDir, 'solution.patch');
  if (existsSync(patchFile)) {
    solutionPatch = readFileSync(patchFile, 'utf8');
    try {
      parsePatch(solutionPatch);
    } catch (err) {
      return bad('solution.patch', `must be a unified diff: ${(err as Error).message}`);
    }
  }
  return {
    task,
    dir: path.resolve(taskDir),
    repo,
    grader,
    ...(solutionPatch !== undefined ? { solutionPatch } : {}),
    digest: digestOf([task, repo, grader, solutionPatch ?? null]),
  };
}

/**
 * Reads a suite: every sub-folder holding a task.yaml (or listed in `include`) is a task. A
 * missing suite folder or an `include` naming no folder is an `INVALID_ARGUMENT` on `field`; an
 * invalid task is returned in `invalid`, so the rest of the suite still runs.
 */
export function loadIssueSuite(
  suite: string,
  field: string,
  options: { include?: readonly string[]; cwd?: string; predictions?: string } = {},
): IssueSuite {
  const suiteDir = path.resolve(options.cwd ?? process.cwd(), suite);
  if (!existsSync(suiteDir) || !statSync(suiteDir).isDirectory()) {
    throw invalidArgument(`${field}.suite`, `must be a suite folder (no ${suiteDir})`, suite);
  }
  if (existsSync(path.join(suiteDir, SWE_BENCH_INSTANCES))) {
    const predictions =
      options.predictions === undefined
        ? undefined
        : readPredictions(
            path.resolve(options.cwd ?? process.cwd(), options.predictions),
            `${field}.predictions`,
          );
    return {
      suiteDir,
      ...loadSweBenchSuite(suiteDir, field, {
        readTree,
        ...(options.include ? { include: options.include } : {}),
        ...(predictions ? { predictions } : {}),
      }),
    };
  }
  const folders = readdirSync(suiteDir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(path.join(suiteDir, e.name, 'task.yaml')))
    .map((e) => e.name)
    .sort();
  let chosen = folders;
  if (options.include) {
    options.include.forEach((id, i) => {
      if (!existsSync(path.join(suiteDir, id))) {
        throw invalidArgument(`${field}.include[${i}]`, `names no task folder of ${suiteDir}`, id);
      }
    });
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
    const loaded = loadIssueTask(path.join(suiteDir, folder));
    if ('rule' in loaded) invalid.push(loaded);
    else tasks.push(loaded);
  }
  return { suiteDir, tasks, invalid };
}
