import { z } from 'zod';

/**
 * A text argument that reaches a process's argv (a path, a command): a NUL character cannot be
 * passed there, so it is refused here, naming the argument, rather than failing in the
 * sandbox's spawn as an internal error.
 */
export function argvText(): z.ZodString {
  return z
    .string()
    .min(1)
    .refine((s) => !s.includes('\u0000'), { error: 'must not contain a NUL character' });
}
