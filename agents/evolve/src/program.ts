import { createHash } from 'node:crypto';
import { z } from 'zod';

/** A candidate program: source text in a language (`python` for the shipped suites). */
export interface Program {
  /** Language tag, e.g. `python`; tells the evaluator and the LLM prompts what the source is. */
  language: string;
  /** The whole program. */
  source: string;
}

/** Largest program the search accepts, in characters (a journal record must fit NATS's payload). */
export const MAX_PROGRAM_CHARS = 200_000;

/** Schema of a {@link Program} received from outside (task files, messages, the journal). */
export const ProgramSchema = z
  .object({
    language: z.string().regex(/^[a-z][a-z0-9+#-]{0,31}$/, 'must be a language tag like python'),
    source: z.string().max(MAX_PROGRAM_CHARS, `must be at most ${MAX_PROGRAM_CHARS} characters`),
  })
  .strict();

/**
 * The sha256 (hex) of a program's source with line endings normalised to `\n`: the identity used
 * to deduplicate programs (migration, admission).
 */
export function programHash(source: string): string {
  return createHash('sha256').update(source.replace(/\r\n?/g, '\n')).digest('hex');
}
