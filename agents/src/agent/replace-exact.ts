import { ErrorCode, TroupeError } from '@troupe/proto';

/**
 * Replaces the one exact occurrence of `oldText` in `text`. Fails with `INVALID_ARGUMENT` when
 * `oldText` is empty, does not occur (not found), or occurs more than once (ambiguous: the
 * message gives the count and the line numbers so the model can add context).
 */
export function replaceExact(text: string, oldText: string, newText: string, path: string): string {
  if (oldText.length === 0) {
    throw new TroupeError(ErrorCode.INVALID_ARGUMENT, '`old_text`: must not be empty');
  }
  const first = text.indexOf(oldText);
  if (first < 0) {
    throw new TroupeError(
      ErrorCode.INVALID_ARGUMENT,
      `\`old_text\`: not found in ${path} (it must match exactly, whitespace included)`,
    );
  }
  const lines: number[] = [];
  for (let at = first; at >= 0; at = text.indexOf(oldText, at + 1)) {
    lines.push(text.slice(0, at).split('\n').length);
  }
  if (lines.length > 1) {
    throw new TroupeError(
      ErrorCode.INVALID_ARGUMENT,
      `\`old_text\`: ambiguous, found ${lines.length} times in ${path} (lines ${lines.join(', ')}); include more surrounding text so it matches once`,
    );
  }
  return text.slice(0, first) + newText + text.slice(first + oldText.length);
}

/** `text` cut to `maxChars` by dropping its middle, with a note saying how much was dropped. */
export function headTail(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const keep = Math.max(0, maxChars - 60);
  const head = Math.ceil(keep / 2);
  const tail = keep - head;
  const dropped = text.length - head - tail;
  return `${text.slice(0, head)}\n…[${dropped} characters omitted]…\n${text.slice(text.length - tail)}`;
}
