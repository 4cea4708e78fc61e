import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  invalidArgument,
  isTroupeError,
  parseUntrustedText,
  parseUntrustedTextAsync,
  type ParseUntrustedTextOptions,
  parseWith,
  readUntrustedTextFile,
  type TroupeError,
} from '@troupe/proto';
import { ShellTaskSchema, type ShellTask } from '@troupe/rsi';
import { z } from 'zod';

/** `spec.tasks` of an `rsi` job: a suite folder holding `tasks.yaml`. */
export const RsiSuiteRefSchema = z.strictObject({
  /** The suite folder (relative to the coordinator's working directory). */
  suite: z.string().min(1, 'must not be empty').max(4_096),
});

/**
 * A suite's `tasks.yaml`: the seed bank (Phase 1's input), the precommitted development tasks
 * (Phase 2, serial, in this order) and the held-out tasks (Phase 3), all RSI shell tasks.
 */
export const RsiSuiteSchema = z
  .strictObject({
    /** Files of the bank Phase 1 starts from (path → text). @default none */
    seedBank: z.record(z.string(), z.string()).default({}),
    dev: z.array(ShellTaskSchema).min(1, 'needs at least one development task').max(1_000),
    heldOut: z.array(ShellTaskSchema).min(1, 'needs at least one held-out task').max(10_000),
  })
  .superRefine((suite, ctx) => {
    const seen = new Map<string, string>();
    for (const [list, tasks] of [
      ['dev', suite.dev],
      ['heldOut', suite.heldOut],
    ] as const) {
      tasks.forEach((t, i) => {
        const where = `${list}[${i}]`;
        const first = seen.get(t.id);
        if (first !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: [list, i, 'id'],
            message: `repeats ${JSON.stringify(t.id)} of ${first}: development and held-out tasks must be disjoint and unique`,
          });
        }
        seen.set(t.id, where);
      });
    }
  });

/** A loaded suite. */
export interface RsiSuite {
  seedBank: Record<string, string>;
  dev: ShellTask[];
  heldOut: ShellTask[];
}

/** Largest `tasks.yaml` of an RSI suite. */
export const MAX_RSI_TASKS_FILE_BYTES = 1024 * 1024;

/**
 * Reads and checks `<suite>/tasks.yaml` under `baseDir`.
 * @throws TroupeError `INVALID_ARGUMENT` naming `<field>` for a missing file, and the file and
 *   field for a bad one (`tasks.yaml: dev[0].instruction: must not be empty`)
 */
export function loadRsiSuite(suite: string, baseDir: string, field: string): RsiSuite {
  const file = path.resolve(baseDir, suite, 'tasks.yaml');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw missingSuite(field, err);
  }
  const raw = parseUntrustedText(text, suiteParseOptions(suite));
  return parseWith(RsiSuiteSchema, raw, { prefix: `${suite}/tasks.yaml` });
}

/**
 * {@link loadRsiSuite} without holding the event loop (a job's validation on the coordinator):
 * the file is read asynchronously and a large one parsed in a worker thread; same errors.
 */
export async function loadRsiSuiteAsync(
  suite: string,
  baseDir: string,
  field: string,
): Promise<RsiSuite> {
  const file = path.resolve(baseDir, suite, 'tasks.yaml');
  let text: string;
  try {
    text = await readUntrustedTextFile(file, suiteParseOptions(suite));
  } catch (err) {
    if (isTroupeError(err)) throw err;
    throw missingSuite(field, err);
  }
  const raw = await parseUntrustedTextAsync(text, suiteParseOptions(suite));
  return parseWith(RsiSuiteSchema, raw, { prefix: `${suite}/tasks.yaml` });
}

function missingSuite(field: string, err: unknown): TroupeError {
  return invalidArgument(
    `${field}.suite`,
    `must be a folder holding tasks.yaml (${(err as Error).message})`,
  );
}

function suiteParseOptions(suite: string): ParseUntrustedTextOptions & { maxBytes: number } {
  return { format: 'yaml', field: `${suite}/tasks.yaml`, maxBytes: MAX_RSI_TASKS_FILE_BYTES };
}
