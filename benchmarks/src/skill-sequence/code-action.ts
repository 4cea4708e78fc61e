/**
 * The action of a model reply: the code of its first fenced Python block (```python or ```py),
 * or undefined when it has none. An unclosed last fence takes the rest of the reply (a reply cut
 * at the completion cap).
 */
export function firstPythonBlock(reply: string): string | undefined {
  const open = /(^|\n)[ \t]*```[ \t]*(python3?|py)[ \t]*\r?\n/i.exec(reply);
  if (!open) return undefined;
  const start = open.index + open[0].length;
  const rest = reply.slice(start);
  const close = /(^|\n)[ \t]*```/.exec(rest);
  const code = close ? rest.slice(0, close.index) : rest;
  return code.trim() === '' ? undefined : code;
}

/**
 * An observation cut to `maxChars` (head and tail kept) with a reminder of what was cut, so the
 * agent knows to print less rather than believe it saw everything.
 */
export function truncateObservation(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const head = Math.ceil(maxChars * 0.7);
  const tail = maxChars - head;
  return (
    `${text.slice(0, head)}\n…\n${tail > 0 ? text.slice(text.length - tail) : ''}\n` +
    `[output truncated to ${maxChars} chars of ${text.length}; print less, or print ` +
    'only the part you need]'
  );
}
