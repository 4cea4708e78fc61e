import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TASK_ID_PATTERN, TASK_ID_RULE } from '@troupe/coordinator';
import { invalidArgument, parseUntrustedText } from '@troupe/proto';
import { z } from 'zod';
import {
  type InvalidIssueTask,
  IssueTaskLimitsSchema,
  IssueTaskTimeoutsSchema,
  type LoadedIssueTask,
} from './issue-task-spec';
import { LOG_PARSER_NAMES } from './log-parsers';
import { TaskEnvironmentSchema, WorkdirSchema } from './task-environment';
import { scanTaskTrees } from './task-payload';
import { parsePatch } from './unified-patch';

/** The instances file of a SWE-bench suite folder. */
export const SWE_BENCH_INSTANCES = 'instances.jsonl';
/** The settings file of a SWE-bench suite folder. */
export const SWE_BENCH_SUITE_FILE = 'suite.yaml';

/**
 * Where instances are materialised (checkouts at `base_commit`, generated graders): folders named
 * by the digest of what they hold, so a load, a later load and a resumed job's re-staging reuse
 * them, and they are never written twice.
 */
export const SWE_BENCH_CACHE_DIR = path.join(os.tmpdir(), 'troupe-swe-bench');

const logParser = z.enum(LOG_PARSER_NAMES as [string, ...string[]], {
  error: `must be one of ${LOG_PARSER_NAMES.join(', ')}`,
});

/**
 * Settings of a SWE-bench suite (`suite.yaml`): where the repositories are and the defaults of
 * every instance (an instance's own fields of the same name win).
 */
export const SweBenchSuiteFileSchema = z
  .object({
    /**
     * Folder of repositories (relative to the suite folder): `<owner>__<name>` git repositories
     * (checked out at each instance's `base_commit`), or `<instance_id>` plain folders.
     */
    mirror: z.string({ error: 'must be a string (a folder)' }).min(1),
    /** Where the repository goes in the sandbox and the grader. @default /testbed */
    workdir: WorkdirSchema.default('/testbed'),
    /** The environment every instance runs in (an instance may name its own). */
    environment: TaskEnvironmentSchema.optional(),
    /** The test command, run by bash in the workdir after the test patch is applied. */
    test_cmd: z.string({ error: 'must be a string (a shell command)' }).min(1).optional(),
    /** How to read per-test outcomes from the test command's output. */
    log_parser: logParser.optional(),
    timeouts: IssueTaskTimeoutsSchema.optional(),
    limits: IssueTaskLimitsSchema.optional(),
  })
  .strict();
/** A validated `suite.yaml`. */
export type SweBenchSuiteFile = z.output<typeof SweBenchSuiteFileSchema>;

/** A list of test names: a JSON-encoded list (as SWE-bench's datasets store it) or a list. */
const testList = z.preprocess(
  (v) => {
    if (typeof v !== 'string') return v;
    try {
      return JSON.parse(v) as unknown;
    } catch {
      return Symbol('unparseable');
    }
  },
  z.array(z.string({ error: 'must list test names (strings)' }), {
    error: 'must be a list of test names, or a JSON-encoded list',
  }),
);

const requiredText = (what: string) =>
  z.string({ error: `is required (${what})` }).min(1, { error: `must not be empty (${what})` });

/** One SWE-bench instance (a line of `instances.jsonl`). Unknown fields are ignored. */
export const SweBenchInstanceSchema = z.object({
  instance_id: z
    .string({ error: 'is required (the task id)' })
    .regex(TASK_ID_PATTERN, { error: TASK_ID_RULE }),
  repo: z
    .string({ error: 'is required (owner/name)' })
    .regex(/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/, { error: 'must be owner/name' }),
  base_commit: z
    .string({ error: 'is required (the commit the repository is checked out at)' })
    .regex(/^[0-9a-f]{7,40}$/, { error: 'must be a commit id (7 to 40 hex digits)' }),
  problem_statement: requiredText('the issue text'),
  patch: requiredText('the gold patch, a unified diff'),
  test_patch: requiredText('the test patch, a unified diff'),
  FAIL_TO_PASS: testList,
  PASS_TO_PASS: testList,
  /** Environment set-up of this instance (else the suite's). */
  environment: TaskEnvironmentSchema.optional(),
  test_cmd: z.string({ error: 'must be a string (a shell command)' }).min(1).optional(),
  log_parser: logParser.optional(),
  workdir: WorkdirSchema.optional(),
});
/** A validated SWE-bench instance. */
export type SweBenchInstance = z.output<typeof SweBenchInstanceSchema>;

/** One line of a predictions file (SWE-bench's format). */
export const SweBenchPredictionSchema = z.object({
  instance_id: z.string({ error: 'is required' }).min(1),
  model_patch: z.string({ error: 'must be a string (a unified diff, empty for none)' }).nullable(),
  model_name_or_path: z.string().optional(),
});

/** The generated grader: apply the test patch as SWE-bench does, then run the tests. */
export function sweBenchGraderScript(): string {
  return `#!/bin/bash
# Generated by the issue-resolution SWE-bench loader: applies the hidden test patch, then runs the
# test command. The verdict comes from the per-test outcomes the driver parses from this output.
set -u
cd "\${WORKSPACE}"
tp="\${GRADER_DIR}/test.patch"
if ! git apply --verbose "$tp" 2>&1 && ! patch --batch --fuzz=5 -p1 -i "$tp" 2>&1; then
  echo "FAILED: the test patch does not apply"
  exit 2
fi
echo '>>>>> Start Test Output'
bash "\${GRADER_DIR}/test-cmd.sh" 2>&1
echo ">>>>> End Test Output (exit $?)"
exit 0
`;
}

function digestOf(parts: readonly unknown[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

/**
 * The cache folder `<kind>-<key>`, made by `fill` (into a temporary folder, renamed into place,
 * so a folder that exists is complete) unless it exists.
 */
function cachedFolder(kind: string, key: string, fill: (dir: string) => void): string {
  const dir = path.join(SWE_BENCH_CACHE_DIR, `${kind}-${key}`);
  if (existsSync(dir)) return dir;
  mkdirSync(SWE_BENCH_CACHE_DIR, { recursive: true });
  const tmp = mkdtempSync(path.join(SWE_BENCH_CACHE_DIR, `.${kind}-`));
  try {
    fill(tmp);
    renameSync(tmp, dir);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    // Another load made the same folder first.
    if (!existsSync(dir)) throw err;
  }
  return dir;
}

/** The generated grader of an instance, as a folder: run-tests.sh, test.patch, test-cmd.sh. */
function graderFolder(testPatch: string, testCmd: string): string {
  const script = sweBenchGraderScript();
  return cachedFolder('grader', digestOf([script, testPatch, testCmd]), (dir) => {
    writeFileSync(path.join(dir, 'run-tests.sh'), script, { mode: 0o755 });
    writeFileSync(path.join(dir, 'test.patch'), testPatch, { mode: 0o644 });
    writeFileSync(path.join(dir, 'test-cmd.sh'), `${testCmd}\n`, { mode: 0o644 });
  });
}

function firstIssue(error: z.ZodError): { field: string; rule: string } {
  const issue = error.issues[0];
  return {
    field: issue && issue.path.length > 0 ? issue.path.map(String).join('.') : 'instance',
    rule: issue?.message ?? 'invalid',
  };
}

/** Reads a YAML settings file. */
function readSuiteFile(suiteDir: string, field: string): SweBenchSuiteFile {
  const file = path.join(suiteDir, SWE_BENCH_SUITE_FILE);
  if (!existsSync(file)) {
    throw invalidArgument(
      `${field}.suite`,
      `a SWE-bench suite needs ${SWE_BENCH_SUITE_FILE} (mirror, test_cmd, log_parser)`,
      file,
    );
  }
  const raw = parseUntrustedText(readFileSync(file, 'utf8'), { field: SWE_BENCH_SUITE_FILE });
  const parsed = SweBenchSuiteFileSchema.safeParse(raw);
  if (!parsed.success) {
    const { field: f, rule } = firstIssue(parsed.error);
    throw invalidArgument(`${SWE_BENCH_SUITE_FILE} ${f}`, rule);
  }
  return parsed.data;
}

/** Reads a predictions file: instance id → prediction. */
export function readPredictions(
  file: string,
  field: string,
): Map<string, { patch: string; model?: string }> {
  if (!existsSync(file))
    throw invalidArgument(field, `must be a predictions file (no ${file})`, file);
  const out = new Map<string, { patch: string; model?: string }>();
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (line.trim() === '') return;
      let raw: unknown;
      try {
        raw = JSON.parse(line);
      } catch {
        throw invalidArgument(`${field} line ${i + 1}`, 'must be a JSON object');
      }
      const p = SweBenchPredictionSchema.safeParse(raw);
      if (!p.success) {
        const { field: f, rule } = firstIssue(p.error);
        throw invalidArgument(`${field} line ${i + 1} ${f}`, rule);
      }
      out.set(p.data.instance_id, {
        patch: p.data.model_patch ?? '',
        ...(p.data.model_name_or_path ? { model: p.data.model_name_or_path } : {}),
      });
    });
  return out;
}

/**
 * The folder of an instance's repository at its base commit: the mirror's `<instance_id>` plain
 * folder as it is, or a checkout of the `<owner>__<name>` git repository (`git archive`, so
 * symlinks and modes are kept), cached.
 */
function repoFolder(mirror: string, instance: SweBenchInstance): string {
  const plain = path.join(mirror, instance.instance_id);
  if (existsSync(plain) && statSync(plain).isDirectory()) return plain;
  const gitDir = path.join(mirror, instance.repo.replace('/', '__'));
  if (!existsSync(gitDir)) {
    throw new Error(`the mirror has neither ${gitDir} (a git repository) nor ${plain}`);
  }
  let commit: string;
  try {
    commit = execFileSync(
      'git',
      ['-C', gitDir, 'rev-parse', '--verify', `${instance.base_commit}^{commit}`],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
      .toString('utf8')
      .trim();
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString('utf8').trim();
    throw new Error(
      `cannot check out ${instance.base_commit} of ${gitDir}: ${stderr || (err as Error).message}`,
    );
  }
  return cachedFolder('repo', digestOf([path.resolve(gitDir), commit]), (dir) => {
    // Streamed from git to tar: a repository of any size checks out in bounded memory.
    execFileSync(
      'bash',
      [
        '-o',
        'pipefail',
        '-c',
        'git -C "$1" archive --format=tar "$2" | tar -x -C "$3"',
        'checkout',
        gitDir,
        commit,
        dir,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
  });
}

/**
 * Reads a SWE-bench suite folder (`suite.yaml` and `instances.jsonl`): each valid instance becomes
 * a task whose repository is the mirror's checkout at `base_commit`, whose grader applies
 * `test_patch` and runs `test_cmd`, and which is resolved when every FAIL_TO_PASS and
 * PASS_TO_PASS test passes. An instance with a missing or malformed field (or a repository the
 * mirror lacks) is returned in `invalid`, naming the field; the rest run.
 */
export function loadSweBenchSuite(
  suiteDir: string,
  field: string,
  options: {
    include?: readonly string[];
    predictions?: Map<string, { patch: string; model?: string }>;
    /** An instance whose files hold more is invalid, naming `config.maxTaskMb`. @default 256 */
    maxTaskMb?: number;
  } = {},
): { tasks: LoadedIssueTask[]; invalid: InvalidIssueTask[] } {
  const settings = readSuiteFile(suiteDir, field);
  const mirror = path.resolve(suiteDir, settings.mirror);
  const lines = readFileSync(path.join(suiteDir, SWE_BENCH_INSTANCES), 'utf8').split('\n');
  const tasks: LoadedIssueTask[] = [];
  const invalid: InvalidIssueTask[] = [];
  const seen = new Set<string>();
  const include = options.include ? new Set(options.include) : undefined;
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      invalid.push({
        taskId: `line-${i + 1}`,
        field: SWE_BENCH_INSTANCES,
        rule: `line ${i + 1} must be a JSON object`,
      });
      return;
    }
    const rawId = (raw as { instance_id?: unknown } | null)?.instance_id;
    const idOf = typeof rawId === 'string' && TASK_ID_PATTERN.test(rawId) ? rawId : `line-${i + 1}`;
    if (include && !include.has(idOf)) return;
    const bad = (f: string, rule: string): void => {
      invalid.push({ taskId: idOf, field: f, rule });
    };
    const parsed = SweBenchInstanceSchema.safeParse(raw);
    if (!parsed.success) {
      const { field: f, rule } = firstIssue(parsed.error);
      bad(f, rule);
      return;
    }
    const inst = parsed.data;
    if (seen.has(inst.instance_id)) return bad('instance_id', 'must be unique in the file');
    seen.add(inst.instance_id);
    const testCmd = inst.test_cmd ?? settings.test_cmd;
    if (testCmd === undefined)
      return bad('test_cmd', `is required (here or in ${SWE_BENCH_SUITE_FILE})`);
    const parser = inst.log_parser ?? settings.log_parser;
    if (parser === undefined)
      return bad('log_parser', `is required (here or in ${SWE_BENCH_SUITE_FILE})`);
    const environment = inst.environment ?? settings.environment;
    if (environment === undefined) {
      return bad('environment', `is required (here or in ${SWE_BENCH_SUITE_FILE})`);
    }
    for (const [f, text] of [
      ['patch', inst.patch],
      ['test_patch', inst.test_patch],
    ] as const) {
      try {
        parsePatch(text);
      } catch (err) {
        return bad(f, `must be a unified diff: ${(err as Error).message}`);
      }
    }
    let repoDir: string;
    try {
      repoDir = repoFolder(mirror, inst);
    } catch (err) {
      return bad('repo', (err as Error).message);
    }
    const prediction = options.predictions?.get(inst.instance_id);
    const trees = scanTaskTrees(
      { repo: repoDir, grader: graderFolder(inst.test_patch, testCmd) },
      Buffer.byteLength(inst.patch) + Buffer.byteLength(prediction?.patch ?? ''),
      options.maxTaskMb,
    );
    if ('rule' in trees) return bad(trees.field, trees.rule);
    const task = {
      id: inst.instance_id,
      instruction: inst.problem_statement,
      image: environment.base,
      workdir: inst.workdir ?? settings.workdir,
      environment,
      timeouts: settings.timeouts ?? IssueTaskTimeoutsSchema.parse({}),
      limits: settings.limits ?? IssueTaskLimitsSchema.parse({}),
    };
    const tests = {
      logParser: parser,
      failToPass: inst.FAIL_TO_PASS,
      passToPass: inst.PASS_TO_PASS,
    };
    tasks.push({
      task,
      dir: suiteDir,
      ...trees,
      solutionPatch: inst.patch,
      tests,
      ...(prediction ? { prediction } : {}),
    });
  });
  if (include) {
    for (const id of include) {
      if (!tasks.some((t) => t.task.id === id) && !invalid.some((t) => t.taskId === id)) {
        throw invalidArgument(
          `${field}.include`,
          `names no instance of ${SWE_BENCH_INSTANCES}`,
          id,
        );
      }
    }
  }
  return { tasks, invalid };
}
