import { z } from 'zod';
import { type BankLimits } from './bank-limits';

/** The characters a path segment may use. */
const SEGMENT = /^[A-Za-z0-9._-]+$/;
/** Longest segment (a file or directory name), as on common file systems. */
const MAX_SEGMENT_LENGTH = 255;
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * The rule a bank path breaks, or `undefined` when it is valid. A valid path is relative and
 * POSIX: `/`-separated segments of `[A-Za-z0-9._-]` (no empty, `.` or `..` segment, no leading
 * `/`, no `\`, no NUL or other control character), at most `maxDepth` segments and
 * `maxPathLength` characters, each segment at most 255 characters. The rules are checked in a
 * fixed order so the message names the most specific one.
 */
export function bankPathRule(path: unknown, limits: BankLimits): string | undefined {
  if (typeof path !== 'string') return 'must be a string';
  if (path.length === 0) return 'must not be empty';
  if (CONTROL.test(path)) return 'must not contain NUL or other control characters';
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) return 'must be relative, not absolute';
  if (path.includes('\\')) return 'must use "/" as separator, never "\\"';
  if (path.length > limits.maxPathLength) {
    return `must be at most ${limits.maxPathLength} characters (maxPathLength)`;
  }
  const segments = path.split('/');
  for (const segment of segments) {
    if (segment === '') return 'must not have empty segments (leading, trailing or double "/")';
    if (segment === '..') return 'must not contain ".." segments';
    if (segment === '.') return 'must not contain "." segments';
    if (!SEGMENT.test(segment)) {
      return `must only use [A-Za-z0-9._-] in each segment (segment ${JSON.stringify(segment)})`;
    }
    if (segment.length > MAX_SEGMENT_LENGTH) {
      return `must not have a segment longer than ${MAX_SEGMENT_LENGTH} characters`;
    }
  }
  if (segments.length > limits.maxDepth) {
    return `must have at most ${limits.maxDepth} segments (maxDepth), has ${segments.length}`;
  }
  return undefined;
}

/** A zod schema for a bank path under `limits` (the issue message is the rule broken). */
export function bankPathSchema(limits: BankLimits): z.ZodType<string> {
  return z.string().superRefine((path, ctx) => {
    const rule = bankPathRule(path, limits);
    if (rule !== undefined)
      ctx.addIssue({ code: 'custom', message: rule, params: { rule: 'path' } });
  });
}
