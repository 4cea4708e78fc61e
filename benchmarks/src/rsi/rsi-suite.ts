import path from 'node:path';
import {
  invalidArgument,
  isTroupeError,
  parseUntrustedTextAsync,
  type ParseUntrustedTextOptions,
  parseWith,
  readUntrustedTextFile,
  type TroupeError,
} from '@troupe/proto';
import { ShellTaskSchema, type ShellTask } from '@troupe/rsi';
import { z } from 'zod';
import { parseRsiDesktopSuite, type RsiDesktopSuite } from './rsi-desktop-suite';

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
    /** Shell sandboxes (the default; `desktop` suites are {@link RsiDesktopSuiteSchema}). */
    environment: z.literal('shell').optional(),
    /** Files of the bank Phase 1 starts from (path → text). @default none */
    seedBank: z.record(z.string(), z.string()).default({}),
    /**
     * What Phase 1's Curriculum is told about the domain (never a task's text or evaluator).
     * @default {@link DEFAULT_PHASE1_BRIEF}
     */
    phase1Brief: z.string().trim().min(1, 'must not be empty').max(20_000).optional(),
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

/** Phase 1's brief when a suite gives none. */
export const DEFAULT_PHASE1_BRIEF =
  'Shell tasks in a Linux sandbox without network access: creating, reading and changing files, ' +
  'text processing and counting with standard command-line tools.';

/** A loaded suite. */
export interface RsiSuite {
  environment?: 'shell';
  seedBank: Record<string, string>;
  phase1Brief: string;
  dev: ShellTask[];
  heldOut: ShellTask[];
}

/** Largest `tasks.yaml` of an RSI suite. */
export const MAX_RSI_TASKS_FILE_BYTES = 1024 * 1024;

/**
 * Reads and checks `<suite>/tasks.yaml` under `baseDir`: a shell suite, or with `environment:
 * desktop` a desktop suite (see `rsi-desktop-suite.ts`). Without holding the event loop (a job's
 * validation runs on the coordinator): the file is read asynchronously and a large one parsed in
 * a worker thread.
 * @throws TroupeError `INVALID_ARGUMENT` naming `<field>` for a missing file, and the file and
 *   field for a bad one (`tasks.yaml: dev[0].instruction: must not be empty`)
 */
export async function loadRsiSuite(
  suite: string,
  baseDir: string,
  field: string,
): Promise<RsiSuite | RsiDesktopSuite> {
  const file = path.resolve(baseDir, suite, 'tasks.yaml');
  let text: string;
  try {
    text = await readUntrustedTextFile(file, suiteParseOptions(suite));
  } catch (err) {
    if (isTroupeError(err)) throw err;
    throw missingSuite(field, err);
  }
  return suiteFrom(await parseUntrustedTextAsync(text, suiteParseOptions(suite)), suite, baseDir);
}

/** A parsed `tasks.yaml` as a shell suite, or with `environment: desktop` a desktop suite. */
async function suiteFrom(
  raw: unknown,
  suite: string,
  baseDir: string,
): Promise<RsiSuite | RsiDesktopSuite> {
  if (typeof raw === 'object' && raw !== null && 'environment' in raw) {
    if (raw.environment === 'desktop') {
      return parseRsiDesktopSuite(raw, baseDir, `${suite}/tasks.yaml`);
    }
  }
  const parsed = parseWith(RsiSuiteSchema, raw, { prefix: `${suite}/tasks.yaml` });
  return { ...parsed, phase1Brief: parsed.phase1Brief ?? DEFAULT_PHASE1_BRIEF };
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
