import { errorCode, invalidArgument } from '@troupe/proto';
import { z } from 'zod';

/** Longest path a tool takes, in UTF-8 bytes (Linux's PATH_MAX, its terminating NUL aside). */
export const MAX_PATH_BYTES = 4_095;
/** Longest command a tool takes, in UTF-8 bytes (one argv string: Linux's MAX_ARG_STRLEN - 1). */
export const MAX_COMMAND_BYTES = 131_071;

/**
 * A text argument that reaches a process's argv (a path, a command): a NUL character cannot be
 * passed there, nor a string longer than the kernel takes (the spawn fails with E2BIG), so both
 * are refused here, naming the argument, rather than failing in the sandbox's spawn as an
 * internal error.
 */
export function argvText(maxBytes: number): z.ZodString {
  return z
    .string()
    .min(1)
    .refine((s) => !s.includes('\u0000'), { error: 'must not contain a NUL character' })
    .refine((s) => s.length <= maxBytes && Buffer.byteLength(s, 'utf8') <= maxBytes, {
      error: `must be at most ${maxBytes} bytes`,
    });
}

/**
 * Runs a write of the file at `path`; a write the sandbox refuses (a directory, a read-only
 * place) becomes an error naming `arguments.path`.
 */
export async function writingPath<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (errorCode(err) !== 'INVALID_ARGUMENT') throw err;
    throw invalidArgument('arguments.path', (err as Error).message);
  }
}
