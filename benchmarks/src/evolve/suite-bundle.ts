import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseSearchTaskSpec, type Program, type SearchTaskSpec } from '@troupe/evolve';
import { errorCode, invalidArgument } from '@troupe/proto';

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

/**
 * Reads a suite (task.yaml, seeds, and the files of its phases) synchronously, so a job's
 * validation can name what is wrong; every failure is an `INVALID_ARGUMENT` on `field`.
 */
export function loadSuiteBundle(suite: string, field: string, cwd?: string): SuiteBundle {
  const suiteDir = resolveSuiteDir(suite, cwd);
  const taskFile = path.join(suiteDir, 'task.yaml');
  let text: string;
  try {
    text = readFileSync(taskFile, 'utf8');
  } catch {
    throw invalidArgument(
      field,
      `must be a suite folder holding task.yaml (no ${taskFile})`,
      suite,
    );
  }
  let spec: SearchTaskSpec;
  try {
    spec = parseSearchTaskSpec(text);
  } catch (err) {
    if (errorCode(err) !== 'INVALID_ARGUMENT') throw err;
    throw invalidArgument(field, `${taskFile} is invalid: ${(err as Error).message}`);
  }
  const seeds = spec.seeds.map((file, i) => {
    try {
      return { language: spec.language, source: readFileSync(path.join(suiteDir, file), 'utf8') };
    } catch {
      throw invalidArgument(field, `seed ${file} (task.yaml seeds[${i}]) cannot be read`);
    }
  });
  const files: Record<string, string> = {};
  let bytes = 0;
  const add = (rel: string): void => {
    const abs = path.join(suiteDir, rel);
    let st;
    try {
      st = statSync(abs);
    } catch {
      throw invalidArgument(field, `phase file ${rel} does not exist in ${suiteDir}`);
    }
    if (st.isDirectory()) {
      for (const entry of readdirSync(abs).sort()) {
        if (entry === '__pycache__' || entry.startsWith('.')) continue;
        add(path.posix.join(rel, entry));
      }
      return;
    }
    if (!st.isFile() || files[rel] !== undefined) return;
    const content = readFileSync(abs);
    bytes += content.length;
    if (bytes > MAX_SUITE_BYTES) {
      throw invalidArgument(field, `the phases' files exceed ${MAX_SUITE_BYTES} bytes`);
    }
    files[rel] = content.toString('base64');
  };
  for (const f of [...spec.phases.validation.files, ...spec.phases.test.files]) {
    add(f.replace(/\/+$/, ''));
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
