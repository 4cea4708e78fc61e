import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  loadDesktopSuite,
  loadIssueTask,
  parseSuiteTaskFile,
  registerBuiltinDrivers,
} from '@troupe/benchmarks';
import { DriverRegistry, parseSpecTextAsync, TASK_ID_PATTERN } from '@troupe/coordinator';
import fc from 'fast-check';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import {
  hostileJson,
  hostileYaml,
  mutatedDocument,
  nastyString,
  type TextCase,
  wrongValue,
} from '../arbitraries';
import type { FuzzTarget } from '../fuzz-target';
import { judgeError, settled } from '../oracle';
import { repoRoot } from '../repo-root';

/** The task file formats of the shipped drivers. */
const FileKind = {
  /** issue-resolution: `<suite>/<task>/task.yaml`. */
  ISSUE: 'issue-resolution task.yaml',
  /** desktop-tasks: `<suite>/tasks.yaml`. */
  DESKTOP: 'desktop-tasks tasks.yaml',
  /** evolve: `<suite>/task.yaml`. */
  EVOLVE: 'evolve task.yaml',
  /** shell-tasks: the task list inline in `spec.tasks`. */
  SHELL: 'shell-tasks spec.tasks',
  /** shell-tasks: a task file (`tasks: {file, upload}`), JSONL, one task a line. */
  JSONL: 'shell-tasks tasks.jsonl',
} as const;
type FileKind = (typeof FileKind)[keyof typeof FileKind];

/** The reference the JSONL cases' spec names (the file is handed to the check directly). */
const JSONL_UPLOAD = `sha256:${'0'.repeat(64)}`;

/**
 * JSONL task files: lines that are the shipped shell tasks, those with one field given a wrong
 * value (or an unknown key), hostile JSON and nasty strings, joined by `\n` or `\r\n`.
 */
function jsonlCase(tasks: readonly Record<string, unknown>[]): fc.Arbitrary<TaskFileCase> {
  const oneLine = (text: string) => text.replace(/\r?\n/g, ' ');
  const task = fc.constantFrom(...tasks);
  const line = fc.oneof(
    { arbitrary: task.map((t) => ({ text: JSON.stringify(t), how: 'task' })), weight: 4 },
    {
      arbitrary: fc
        .record({
          t: task,
          key: fc.oneof(
            fc.constantFrom('id', 'command', 'env', 'files', 'image', 'cwd', 'expectExitCode'),
            nastyString,
          ),
          value: wrongValue,
        })
        .map(({ t, key, value }) => ({
          text: JSON.stringify({ ...t, [key]: value }),
          how: `task.${key} → ${typeof value}`,
        })),
      weight: 2,
    },
    { arbitrary: hostileJson.map((c) => ({ text: oneLine(c.text), how: c.how })), weight: 1 },
    { arbitrary: nastyString.map((t) => ({ text: oneLine(t), how: 'nasty line' })), weight: 1 },
  );
  return fc
    .record({ lines: fc.array(line, { maxLength: 12 }), crlf: fc.boolean() })
    .map(({ lines, crlf }) => ({
      kind: FileKind.JSONL,
      format: 'json',
      text: lines.map((l) => l.text).join(crlf ? '\r\n' : '\n'),
      how: `jsonl [${lines.map((l) => l.how).join(', ')}]`,
    }));
}

/** One case: a task file's text for one driver. */
export interface TaskFileCase extends TextCase {
  kind: FileKind;
}

const ISSUE_TASK = 'py-lru-cache';

/**
 * (b) Task files of every shipped driver, written to a temp suite and read by the drivers' own
 * loaders: mutations of the shipped files and hostile YAML.
 */
export const taskFilesTarget: FuzzTarget<TaskFileCase> = {
  name: 'task-files',
  description: 'task files of every driver through the drivers’ loaders and schemas',
  async start() {
    const root = repoRoot();
    const read = (f: string) => readFileSync(path.join(root, f), 'utf8');
    const shellTasks = (
      parseYaml(read('benchmarks/suites/shell-smoke/job.yaml')) as {
        tasks: Record<string, unknown>[];
      }
    ).tasks;
    const seeds: Record<FileKind, unknown> = {
      [FileKind.ISSUE]: parseYaml(
        read(`benchmarks/suites/bugfix-mini/${ISSUE_TASK}/task.yaml`),
      ) as unknown,
      [FileKind.DESKTOP]: parseYaml(read('benchmarks/suites/desktop-mini/tasks.yaml')) as unknown,
      [FileKind.EVOLVE]: parseYaml(read('benchmarks/suites/binpacking-or3/task.yaml')) as unknown,
      [FileKind.SHELL]: shellTasks,
      // Unused: JSONL cases are built line by line (jsonlCase).
      [FileKind.JSONL]: shellTasks,
    };
    const roots: Record<FileKind, string> = {
      [FileKind.ISSUE]: 'task.yaml',
      [FileKind.DESKTOP]: 'spec.tasks',
      [FileKind.EVOLVE]: 'task.yaml',
      [FileKind.SHELL]: 'spec.tasks',
      [FileKind.JSONL]: 'spec.tasks',
    };
    const dir = mkdtempSync(path.join(os.tmpdir(), 'troupe-fuzz-'));
    // An issue task folder with what the loader checks besides task.yaml.
    const taskDir = path.join(dir, ISSUE_TASK);
    mkdirSync(path.join(taskDir, 'repo'), { recursive: true });
    mkdirSync(path.join(taskDir, 'grader'), { recursive: true });
    writeFileSync(path.join(taskDir, 'repo', 'main.py'), 'print(1)\n');
    writeFileSync(path.join(taskDir, 'grader', 'run-tests.sh'), '#!/bin/sh\nexit 0\n');
    const registry = registerBuiltinDrivers(new DriverRegistry());
    const kinds = Object.values(FileKind);
    const arbitrary = fc
      .constantFrom(...kinds)
      .chain((kind) =>
        kind === FileKind.JSONL
          ? jsonlCase(shellTasks)
          : fc
              .oneof(
                { arbitrary: mutatedDocument([seeds[kind]], roots[kind]), weight: 3 },
                { arbitrary: hostileYaml, weight: 1 },
              )
              .map((c): TaskFileCase => ({ ...c, kind })),
      );

    /** Reads `c` with its driver's loader: `undefined`, or why the answer is wrong. */
    const load = async (c: TaskFileCase): Promise<string | undefined> => {
      switch (c.kind) {
        case FileKind.ISSUE: {
          await writeFile(path.join(taskDir, 'task.yaml'), c.text);
          // An invalid task is reported (with a plannable id); the rest of the suite runs.
          const r = await loadIssueTask(taskDir);
          if ('task' in r) return undefined;
          if (!TASK_ID_PATTERN.test(r.taskId))
            return `reported under an invalid task id ${r.taskId}`;
          if (r.field === '' || r.rule === '')
            return `reported without field or rule: ${JSON.stringify(r)}`;
          return undefined;
        }
        case FileKind.DESKTOP:
          await writeFile(path.join(dir, 'tasks.yaml'), c.text);
          await loadDesktopSuite('.', dir, 'spec.tasks');
          return undefined;
        case FileKind.EVOLVE:
          await parseSuiteTaskFile(c.text);
          return undefined;
        case FileKind.SHELL:
          // Not a file: the list is part of a spec, parsed with the spec's bounded parser.
          await registry.validate({
            kind: 'shell-tasks',
            tasks: await parseSpecTextAsync(c.text, c.format),
          });
          return undefined;
        case FileKind.JSONL:
          // The file as uploaded, read line by line at submission.
          await registry.validate(
            { kind: 'shell-tasks', tasks: { file: 'tasks.jsonl', upload: JSONL_UPLOAD } },
            { readTaskFile: async () => new TextEncoder().encode(c.text) },
          );
          return undefined;
      }
    };
    const valid: TaskFileCase = {
      kind: FileKind.ISSUE,
      format: 'yaml',
      how: 'valid',
      text: toYaml(seeds[FileKind.ISSUE]),
    };
    return {
      arbitrary,
      async run(c) {
        const r = await settled(load(c));
        const wrong =
          r.error !== undefined
            ? judgeError(r.error, { fieldPrefix: [roots[c.kind].split('.')[0]!] })
            : r.value;
        return wrong ? { wrong: `${c.kind}: ${c.how}: ${wrong}` } : {};
      },
      async checkValid() {
        writeFileSync(path.join(taskDir, 'task.yaml'), valid.text);
        const again = await loadIssueTask(taskDir);
        return 'task' in again ? undefined : `valid task.yaml refused: ${JSON.stringify(again)}`;
      },
      async stop() {
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};
