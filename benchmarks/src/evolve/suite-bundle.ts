import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { type Program, type SearchTaskSpec, SearchTaskSpecSchema } from '@troupe/evolve';
import {
  errorCode,
  invalidArgument,
  isTroupeError,
  parseUntrustedTextAsync,
  parseWith,
  readUntrustedTextFile,
} from '@troupe/proto';

/** Largest suite (all files of both phases) a job may ship to its tasks. */
export const MAX_SUITE_BYTES = 8 * 1024 * 1024;

/** A suite read from disk, ready to travel in a task's input. */
export interface SuiteBundle {
  /** Absolute suite folder. */
  suiteDir: string;
  /** Its parsed task.yaml. */
  spec: SearchTaskSpec;
  /** Its seed programs. */
  seeds: Program[];
  /** Suite-relative path → base64, every file either phase ships (folders expanded). */
  files: Record<string, string>;
}

/** Where a job's `suite` points: absolute, or relative to `cwd`. */
export function resolveSuiteDir(suite: string, cwd: string = process.cwd()): string {
  return path.resolve(cwd, suite);
}

/** Largest `task.yaml` of a search suite (the shipped ones are about 2 KiB). */
export const MAX_SUITE_TASK_FILE_BYTES = 256 * 1024;

/**
 * Parses the text of a suite's `task.yaml` like `parseSearchTaskSpec`, with a size limit and, for
 * a large document, in a worker thread.
 * @throws TroupeError `INVALID_ARGUMENT` naming every broken field (`task.yaml.seeds[0]: …`)
 */
export async function parseSuiteTaskFile(text: string): Promise<SearchTaskSpec> {
  const value = await parseUntrustedTextAsync(text, {
    field: 'task.yaml',
    maxBytes: MAX_SUITE_TASK_FILE_BYTES,
  });
  return parseWith(SearchTaskSpecSchema, value, { prefix: 'task.yaml' });
}

/**
 * Reads a suite (task.yaml, seeds, and the files of its phases), so a job's validation can name
 * what is wrong; every failure is an `INVALID_ARGUMENT` on `field`. Reads asynchronously and
 * parses a large task.yaml in a worker thread: validation runs on the coordinator's event loop.
 */
export async function loadSuiteBundle(
  suite: string,
  field: string,
  cwd?: string,
): Promise<SuiteBundle> {
  const suiteDir = resolveSuiteDir(suite, cwd);
  const taskFile = path.join(suiteDir, 'task.yaml');
  let text: string;
  try {
    text = await readUntrustedTextFile(taskFile, {
      field: 'task.yaml',
      maxBytes: MAX_SUITE_TASK_FILE_BYTES,
    });
  } catch (err) {
    if (isTroupeError(err)) {
      throw invalidArgument(field, `${taskFile} is invalid: ${err.message}`);
    }
    throw invalidArgument(
      field,
      `must be a suite folder holding task.yaml (no ${taskFile})`,
      suite,
    );
  }
  let spec: SearchTaskSpec;
  try {
    spec = await parseSuiteTaskFile(text);
  } catch (err) {
    if (errorCode(err) !== 'INVALID_ARGUMENT') throw err;
    throw invalidArgument(field, `${taskFile} is invalid: ${(err as Error).message}`);
  }
  const seeds = await Promise.all(
    spec.seeds.map(async (file, i) => {
      try {
        return {
          language: spec.language,
          source: await readFile(path.join(suiteDir, file), 'utf8'),
        };
      } catch {
        throw invalidArgument(field, `seed ${file} (task.yaml seeds[${i}]) cannot be read`);
      }
    }),
  );
  const files: Record<string, string> = {};
  let bytes = 0;
  const add = async (rel: string): Promise<void> => {
    const abs = path.join(suiteDir, rel);
    let st;
    try {
      st = await stat(abs);
    } catch {
      throw invalidArgument(field, `phase file ${rel} does not exist in ${suiteDir}`);
    }
    if (st.isDirectory()) {
      for (const entry of (await readdir(abs)).sort()) {
        if (entry === '__pycache__' || entry.startsWith('.')) continue;
        await add(path.posix.join(rel, entry));
      }
      return;
    }
    if (!st.isFile() || files[rel] !== undefined) return;
    // Checked before reading: a huge file is never read whole.
    if (bytes + st.size > MAX_SUITE_BYTES) {
      throw invalidArgument(field, `the phases' files exceed ${MAX_SUITE_BYTES} bytes`);
    }
    const content = await readFile(abs);
    bytes += content.length;
    if (bytes > MAX_SUITE_BYTES) {
      throw invalidArgument(field, `the phases' files exceed ${MAX_SUITE_BYTES} bytes`);
    }
    files[rel] = content.toString('base64');
  };
  const candidates = [spec.phases.validation.candidate, spec.phases.test.candidate];
  for (const f of [...spec.phases.validation.files, ...spec.phases.test.files, ...candidates]) {
    if (f !== undefined) await add(f.replace(/\/+$/, ''));
  }
  return { suiteDir, spec, seeds, files };
}

/**
 * The files one phase ships: entries of `files` listed in `phases.<phase>.files` (a folder takes
 * everything under it). Test-only files never reach a validation sandbox.
 */
export function phaseFiles(
  spec: SearchTaskSpec,
  files: Readonly<Record<string, string>>,
  phase: 'validation' | 'test',
): Record<string, string> {
  const wanted = spec.phases[phase].files;
  const out: Record<string, string> = {};
  for (const [rel, content] of Object.entries(files)) {
    const listed = wanted.some((w) => {
      const base = w.replace(/\/+$/, '');
      return rel === base || rel.startsWith(`${base}/`);
    });
    if (listed) out[rel] = content;
  }
  return out;
}

/**
 * Largest suite (files of both phases, before base64) a job may ship: the files travel inside
 * the task's input and the validation phase's inside every island step, each one NATS message
 * (`max_payload`, 1 MiB by default; base64 adds a third, the step its population).
 */
export const MAX_INLINE_SUITE_BYTES = 512 * 1024;

/**
 * Refuses a suite whose files cannot travel in one message ({@link MAX_INLINE_SUITE_BYTES}),
 * naming the largest files, so the job fails at submission instead of after `started`.
 * @throws TroupeError `INVALID_ARGUMENT` on `field`
 */
export function checkSuiteFitsMessages(bundle: SuiteBundle, field: string): void {
  const sizes = Object.entries(bundle.files).map(
    ([rel, base64]) => [rel, Buffer.byteLength(base64, 'base64')] as const,
  );
  const bytes = sizes.reduce((sum, [, n]) => sum + n, 0);
  if (bytes <= MAX_INLINE_SUITE_BYTES) return;
  const largest = [...sizes]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([rel, n]) => `${rel} ${n} bytes`)
    .join(', ');
  throw invalidArgument(
    field,
    `the phases' files of ${bundle.suiteDir} are ${bytes} bytes, more than ${MAX_INLINE_SUITE_BYTES} bytes ` +
      `(they travel in NATS messages, 1 MiB each by default); largest: ${largest}. Ship less data ` +
      '(generate it in the grader from a fixed seed, or compress it)',
  );
}
