import { parseWith } from '@troupe/proto';
import { z } from 'zod';

/** A file name extension such as `.md`: a dot, then 1 to 16 of `[A-Za-z0-9_-]`. */
const ExtensionSchema = z
  .string()
  .regex(/^\.[A-Za-z0-9_-]{1,16}$/, 'must be a dot and 1 to 16 of [A-Za-z0-9_-], e.g. ".md"');

/**
 * The boundaries of a memory bank: what a bank (and so every lesson installed into it) may hold.
 * Strict: an unknown key is an error, so a misspelt limit is never silently ignored.
 */
export const BankLimitsSchema = z
  .strictObject({
    /** Most files in the bank. @default 512 */
    maxFiles: z.number().int().min(1).max(10_000).default(512),
    /** Largest file, in bytes. @default 262144 (256 KiB) */
    maxFileBytes: z
      .number()
      .int()
      .min(1)
      .max(64 * 1024 * 1024)
      .default(256 * 1024),
    /** Sum of all file sizes, in bytes. @default 4194304 (4 MiB) */
    maxTotalBytes: z
      .number()
      .int()
      .min(1)
      .max(1024 * 1024 * 1024)
      .default(4 * 1024 * 1024),
    /** Most `/`-separated segments in a path (`a/b/c.md` has 3). @default 8 */
    maxDepth: z.number().int().min(1).max(64).default(8),
    /** Longest path, in characters. @default 200 */
    maxPathLength: z.number().int().min(1).max(1024).default(200),
    /**
     * Which files must be valid UTF-8 text: `'all'`, `'none'`, or those whose name ends with one
     * of the listed extensions (e.g. `['.md', '.txt', '.json']`).
     * @default 'all'
     */
    utf8: z
      .union([z.literal('all'), z.literal('none'), z.array(ExtensionSchema).min(1)])
      .default('all'),
  })
  .superRefine((limits, ctx) => {
    if (limits.maxFileBytes > limits.maxTotalBytes) {
      ctx.addIssue({
        code: 'custom',
        path: ['maxFileBytes'],
        message: `must not exceed maxTotalBytes (${limits.maxTotalBytes})`,
      });
    }
  });

/** What a caller passes: every limit optional (see {@link BankLimitsSchema} for defaults). */
export type BankLimitsOptions = z.input<typeof BankLimitsSchema>;

/** Validated limits with defaults filled in. */
export type BankLimits = z.output<typeof BankLimitsSchema>;

/**
 * Validates and defaults bank limits.
 * @throws TroupeError `INVALID_ARGUMENT` naming each field (`limits.maxFiles`, …) and the rule
 */
export function parseBankLimits(options: BankLimitsOptions = {}): BankLimits {
  return parseWith(BankLimitsSchema, options, { prefix: 'limits' });
}
