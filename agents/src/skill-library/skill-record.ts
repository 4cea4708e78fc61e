import { createHash } from 'node:crypto';
import { z } from 'zod';
import { normalisePython } from './extract-functions';

/** Limits of the skill library. */
export const SkillLibraryLimits = {
  /** Characters of one skill's source (a `def` with its decorators). */
  SOURCE_CHARS: 20_000,
  /** Characters of a skill name. */
  NAME_CHARS: 100,
  /** Characters of a description (longer docstrings are cut). */
  DESCRIPTION_CHARS: 2_000,
  /** Records (all versions of all names) one library reads at most. */
  RECORDS: 10_000,
} as const;

/** A library id: `[a-z0-9][a-z0-9_-]{0,63}` (one KV key token). */
export const SkillLibraryIdSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must match [a-z0-9][a-z0-9_-]{0,63}');

/** A skill name: an ASCII Python identifier (also a valid KV key token). */
export const SkillFunctionNameSchema = z
  .string()
  .max(SkillLibraryLimits.NAME_CHARS, `must be at most ${SkillLibraryLimits.NAME_CHARS} characters`)
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a Python identifier ([A-Za-z_][A-Za-z0-9_]*)');

/** A skill's source: non-empty, at most {@link SkillLibraryLimits.SOURCE_CHARS} characters. */
export const SkillSourceSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(
    SkillLibraryLimits.SOURCE_CHARS,
    `must be at most ${SkillLibraryLimits.SOURCE_CHARS} characters`,
  );

/** Where a skill version came from: the job, scenario, task and step that wrote it. */
export const SkillProvenanceSchema = z.strictObject({
  jobId: z.string().min(1).max(200),
  scenario: z.string().min(1).max(200),
  taskId: z.string().min(1).max(200),
  step: z.int().nonnegative(),
  outcome: z.enum(['passed', 'failed', 'unknown']),
  /** ISO 8601 time. */
  at: z.iso.datetime({ offset: true }),
});
/** Where a skill version came from. */
export type SkillProvenance = z.output<typeof SkillProvenanceSchema>;

/** One version of one skill, as stored (and as one JSONL line of an export). */
export const SkillRecordSchema = z.strictObject({
  libraryId: SkillLibraryIdSchema,
  name: SkillFunctionNameSchema,
  version: z.int().positive(),
  source: SkillSourceSchema,
  description: z.string().max(SkillLibraryLimits.DESCRIPTION_CHARS),
  scenario: z.string().min(1).max(200),
  /** Bare names the function calls other than builtins and itself: skills it may depend on. */
  dependencies: z.array(SkillFunctionNameSchema).max(200),
  /** sha256 (hex) of the normalised source ({@link skillSourceHash}). */
  sourceHash: z.string().regex(/^[0-9a-f]{64}$/, 'must be a sha256 hex digest'),
  provenance: SkillProvenanceSchema,
  dropped: z
    .strictObject({
      reason: z.string().min(1).max(2_000),
      at: z.iso.datetime({ offset: true }),
      by: SkillProvenanceSchema,
    })
    .optional(),
});
/** One version of one skill. */
export type SkillRecord = z.output<typeof SkillRecordSchema>;

/**
 * sha256 (hex) of a source normalised by {@link normalisePython} (no comments, blank lines or
 * trailing blanks): the dedupe key of a name's versions.
 */
export function skillSourceHash(source: string): string {
  return createHash('sha256').update(normalisePython(source)).digest('hex');
}

/** Python builtins a skill may call without depending on another skill. */
export const PYTHON_BUILTINS: ReadonlySet<string> = new Set(
  (
    'abs aiter all anext any ascii bin bool breakpoint bytearray bytes callable chr classmethod ' +
    'compile complex delattr dict dir divmod enumerate eval exec filter float format frozenset ' +
    'getattr globals hasattr hash help hex id input int isinstance issubclass iter len list ' +
    'locals map max memoryview min next object oct open ord pow print property range repr ' +
    'reversed round set setattr slice sorted staticmethod str sum super tuple type vars zip ' +
    '__import__ BaseException Exception ArithmeticError AssertionError AttributeError ' +
    'EOFError ImportError IndexError KeyError LookupError NameError NotImplementedError ' +
    'OSError RuntimeError StopIteration TimeoutError TypeError ValueError ZeroDivisionError'
  ).split(' '),
);
