import { createHash } from 'node:crypto';
import { invalidArgument, parseUntrustedText, parseWith } from '@troupe/proto';
import { z } from 'zod';
import { type AnyJobDriver, MAX_TASKS_PER_JOB, type TaskFileTask } from './job-driver';
import { type JobSpec } from './job-spec';

// Task files: a spec's `tasks: {file, upload}` takes its tasks from a JSONL file, one task a line,
// that the client uploaded first (UploadTaskFile). A spec lists at most MAX_INLINE_TASKS tasks
// inline (it travels in one request and one record); a file holds up to MAX_TASKS_PER_JOB. The
// file is kept in the cluster's object store under its SHA-256, so a resume on any coordinator
// reads the same bytes; its lines are checked when a job naming it is submitted, and read again
// when the job is planned.

/** Largest task file a coordinator takes, in bytes. */
export const MAX_TASK_FILE_BYTES = 64 * 1024 * 1024;
/** Largest line of a task file, in bytes (one task). */
export const MAX_TASK_LINE_BYTES = 256 * 1024;
/** Longest file name an upload may give. */
export const MAX_TASK_FILE_NAME = 256;
/** What an upload reference looks like: `sha256:<64 lowercase hex digits>`. */
export const TASK_FILE_UPLOAD_PATTERN = /^sha256:[0-9a-f]{64}$/;
/** Lines checked between two yields of the event loop. */
const LINES_PER_SLICE = 500;

/** A spec's `tasks` when it names a task file. */
export const TaskFileRefSchema = z
  .object({
    /** The file's name as the user wrote it (`tasks.jsonl`), for errors and display. */
    file: z
      .string({ error: 'must be a string (the task file, JSONL, one task a line)' })
      .min(1, { error: 'must not be empty' })
      .max(MAX_TASK_FILE_NAME, { error: `must be at most ${MAX_TASK_FILE_NAME} characters` }),
    /** The stored file, as UploadTaskFile returned it. */
    upload: z
      .string({
        error:
          'is required: the client uploads the file first and names it here (troupe submit and troupe run do; the SDK has uploadTaskFile)',
      })
      .regex(TASK_FILE_UPLOAD_PATTERN, {
        error: 'must be sha256:<64 lowercase hex digits>, as UploadTaskFile returned it',
      }),
  })
  .strict();

/** A spec's `tasks` naming a task file. */
export type TaskFileRef = z.output<typeof TaskFileRefSchema>;

/** Whether a spec's `tasks` names a task file (a mapping with a `file` key). */
export function isTaskFileRef(tasks: unknown): boolean {
  return typeof tasks === 'object' && tasks !== null && !Array.isArray(tasks) && 'file' in tasks;
}

/** The task-file reference of a spec, checked (`INVALID_ARGUMENT` naming `spec.tasks.…`). */
export function taskFileRefOf(spec: JobSpec): TaskFileRef {
  return parseWith(TaskFileRefSchema, spec.tasks, { prefix: 'spec.tasks' });
}

/** Where an uploaded task file is kept in the object store. */
export function taskFileObjectName(upload: string): string {
  if (!TASK_FILE_UPLOAD_PATTERN.test(upload)) {
    throw invalidArgument('upload', 'must be sha256:<64 lowercase hex digits>', upload);
  }
  return `task-files/${upload.slice('sha256:'.length)}`;
}

/** A task file taken in by {@link receiveTaskFile}. */
export interface ReceivedTaskFile {
  /** `sha256:<hex>` of the bytes. */
  upload: string;
  bytes: Uint8Array;
  /** Lines that are not blank. */
  lines: number;
}

/**
 * Takes in an uploaded file's chunks: refuses more than `maxBytes` as soon as they are exceeded
 * (`INVALID_ARGUMENT` naming `chunks`), and text that is not UTF-8; hashes and counts the lines.
 */
export async function receiveTaskFile(
  chunks: AsyncIterable<Uint8Array>,
  maxBytes = MAX_TASK_FILE_BYTES,
): Promise<ReceivedTaskFile> {
  const parts: Uint8Array[] = [];
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of chunks) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      throw invalidArgument('chunks', `a task file must be at most ${maxBytes} bytes`);
    }
    hash.update(chunk);
    parts.push(chunk);
  }
  const bytes = Buffer.concat(parts, size);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw invalidArgument('chunks', 'a task file must be UTF-8 text (JSONL, one task a line)');
  }
  let lines = 0;
  for (const line of text.split('\n')) if (line.trim() !== '') lines++;
  if (lines === 0)
    throw invalidArgument('chunks', 'the task file holds no task (no line that is not blank)');
  return { upload: `sha256:${hash.digest('hex')}`, bytes, lines };
}

/** Options of {@link readTaskFile}. */
export interface ReadTaskFileOptions {
  /** Stops the read between slices of lines. */
  signal?: AbortSignal;
  /** Most tasks. @default MAX_TASKS_PER_JOB */
  maxTasks?: number;
}

/**
 * The tasks of a task file, each line checked by `check` in file order. Errors name the line
 * (`spec.tasks.file:12.command: must not be empty`): a line that is not one JSON document, a line
 * longer than {@link MAX_TASK_LINE_BYTES}, an id already on an earlier line, more than `maxTasks`
 * tasks, or a file without a task. Blank lines are skipped; `\r\n` line ends are accepted. The
 * event loop is yielded every few hundred lines, so a file of a million tasks does not hold it.
 */
export async function readTaskFile<T extends TaskFileTask>(
  bytes: Uint8Array,
  check: (value: unknown, field: string) => T,
  options: ReadTaskFileOptions = {},
): Promise<T[]> {
  const maxTasks = options.maxTasks ?? MAX_TASKS_PER_JOB;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw invalidArgument('spec.tasks.file', 'must be UTF-8 text (JSONL, one task a line)');
  }
  const lines = text.split('\n');
  const tasks: T[] = [];
  const firstLineOf = new Map<string, number>();
  for (let i = 0; i < lines.length; i++) {
    if (i % LINES_PER_SLICE === LINES_PER_SLICE - 1) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (options.signal?.aborted) throw options.signal.reason;
    }
    const line = lines[i]!.endsWith('\r') ? lines[i]!.slice(0, -1) : lines[i]!;
    if (line.trim() === '') continue;
    const n = i + 1;
    const field = `spec.tasks.file:${n}`;
    if (tasks.length >= maxTasks) {
      throw invalidArgument(field, `a job holds at most ${maxTasks} tasks (split the file)`);
    }
    const value = parseUntrustedText(line, {
      field,
      format: 'json',
      maxBytes: MAX_TASK_LINE_BYTES,
    });
    const task = check(value, field);
    const first = firstLineOf.get(task.id);
    if (first !== undefined) {
      throw invalidArgument(`${field}.id`, `must be unique (line ${first} has it too)`, task.id);
    }
    firstLineOf.set(task.id, n);
    tasks.push(task);
  }
  if (tasks.length === 0)
    throw invalidArgument('spec.tasks.file', 'holds no task (every line is blank)');
  return tasks;
}

/**
 * The tasks of a spec naming a task file, read from the store by `read` and checked by the
 * driver's checker. `INVALID_ARGUMENT` naming `spec.tasks.file` when the driver takes no task
 * files, `spec.tasks.upload` when no such upload is stored.
 */
export async function tasksOfTaskFile(
  spec: JobSpec,
  driver: AnyJobDriver,
  read: (upload: string) => Promise<Uint8Array | undefined>,
  options: ReadTaskFileOptions = {},
): Promise<TaskFileTask[]> {
  if (!driver.taskFile) {
    throw invalidArgument(
      'spec.tasks.file',
      `the ${driver.name} driver takes no task files: list its tasks in the spec`,
    );
  }
  const ref = taskFileRefOf(spec);
  const bytes = await read(ref.upload);
  if (!bytes) {
    throw invalidArgument(
      'spec.tasks.upload',
      `names no task file stored in this cluster (upload ${ref.file} first)`,
      ref.upload,
    );
  }
  return readTaskFile(bytes, driver.taskFile.checker(spec), options);
}
