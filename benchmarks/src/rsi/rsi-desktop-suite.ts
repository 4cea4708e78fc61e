import { invalidArgument, parseWith } from '@troupe/proto';
import { ShellTaskLimitsSchema } from '@troupe/rsi';
import { z } from 'zod';
import { type DesktopTask, loadDesktopSuite } from '../desktop-tasks/desktop-task-spec';

const TaskIdsSchema = z.array(z.string().min(1, 'must name a task').max(64));

/**
 * A desktop RSI suite's `tasks.yaml` (`environment: desktop`): the seed bank, and the development
 * and held-out tasks as ids of a `desktop-tasks` suite, whose setup steps prepare each target
 * machine and whose evaluators score Phase 3 (no role ever sees an evaluator).
 */
export const RsiDesktopSuiteSchema = z.strictObject({
  environment: z.literal('desktop'),
  /** Files of the bank Phase 1 starts from (path → text). @default none */
  seedBank: z.record(z.string(), z.string()).default({}),
  /**
   * What Phase 1's Curriculum is told about the domain, and the instruction of its waves' pseudo
   * targets. @default {@link DEFAULT_DESKTOP_PHASE1_BRIEF}
   */
  phase1Brief: z.string().trim().min(1, 'must not be empty').max(20_000).optional(),
  /** Where the tasks come from, and the environment every machine is created as. */
  desktop: z.strictObject({
    /** A `desktop-tasks` suite folder (relative to the coordinator's working directory). */
    suite: z.string().min(1, 'must not be empty').max(4_096),
    /** `desktop` (Docker, Xvfb) or `vm` (a QEMU guest). @default 'desktop' */
    kind: z.enum(['desktop', 'vm']).default('desktop'),
    /** Environment image. @default 'troupe-desktop:latest' */
    image: z.string().min(1).default('troupe-desktop:latest'),
    width: z.int().min(320).max(3840).default(1280),
    height: z.int().min(240).max(2160).default(800),
    memoryMb: z.int().min(256).max(65_536).default(1024),
  }),
  /** Development task ids (Phase 2, serial, in this order). */
  dev: TaskIdsSchema.min(1, 'needs at least one development task').max(1_000),
  /** Held-out task ids (Phase 3). */
  heldOut: TaskIdsSchema.min(1, 'needs at least one held-out task').max(10_000),
  /** Step and time limits of the roles (the shell tasks' limits; memory is `desktop.memoryMb`). */
  limits: ShellTaskLimitsSchema.default(ShellTaskLimitsSchema.parse({})),
});

/** Phase 1's brief of a desktop suite that gives none. */
export const DEFAULT_DESKTOP_PHASE1_BRIEF =
  'Computer-use tasks on a Linux desktop without network access: a terminal, a text editor, a ' +
  'spreadsheet and a file manager, operated with the mouse and keyboard.';

/** A loaded desktop RSI suite: its tasks resolved from the desktop suite. */
export interface RsiDesktopSuite {
  environment: 'desktop';
  seedBank: Record<string, string>;
  phase1Brief: string;
  desktop: z.output<typeof RsiDesktopSuiteSchema>['desktop'];
  limits: z.output<typeof ShellTaskLimitsSchema>;
  dev: DesktopTask[];
  heldOut: DesktopTask[];
}

/**
 * Validates a desktop RSI suite and resolves its task ids in its desktop suite.
 * @throws TroupeError `INVALID_ARGUMENT` naming the field: an unknown id, an id used twice (the
 *   development and held-out tasks must be disjoint), a missing desktop suite
 */
export async function parseRsiDesktopSuite(
  raw: unknown,
  baseDir: string,
  file: string,
): Promise<RsiDesktopSuite> {
  const s = parseWith(RsiDesktopSuiteSchema, raw, { prefix: file });
  const tasks = new Map(
    (await loadDesktopSuite(s.desktop.suite, baseDir, `${file}: desktop`)).map((t) => [t.id, t]),
  );
  const seen = new Map<string, string>();
  const resolve = (list: 'dev' | 'heldOut'): DesktopTask[] =>
    s[list].map((id, i) => {
      const where = `${file}: ${list}[${i}]`;
      const task = tasks.get(id);
      if (task === undefined) {
        throw invalidArgument(where, `must name a task of ${s.desktop.suite}`, id);
      }
      const first = seen.get(id);
      if (first !== undefined) {
        throw invalidArgument(
          where,
          `repeats ${JSON.stringify(id)} of ${first}: development and held-out tasks must be disjoint and unique`,
          id,
        );
      }
      seen.set(id, `${list}[${i}]`);
      return task;
    });
  return {
    environment: 'desktop',
    seedBank: s.seedBank,
    phase1Brief: s.phase1Brief ?? DEFAULT_DESKTOP_PHASE1_BRIEF,
    desktop: s.desktop,
    limits: s.limits,
    dev: resolve('dev'),
    heldOut: resolve('heldOut'),
  };
}
