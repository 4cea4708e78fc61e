/**
 * The body of the first fenced code block (```` ``` ```` or `~~~`, with or without a language
 * tag) in a model reply, or `undefined` when there is none. An unterminated fence counts up to
 * the end of the text (a reply cut off by the token limit still yields its code).
 */
export function extractFirstCodeBlock(text: string): string | undefined {
  const open = /^[ \t]*(`{3,}|~{3,})[ \t]*([^\n`]*)\r?\n/m.exec(text);
  if (!open) return undefined;
  const fence = open[1] as string;
  const start = open.index + open[0].length;
  const rest = text.slice(start);
  const close = new RegExp(
    `^[ \\t]*${fence[0] === '`' ? '`' : '~'}{${fence.length},}[ \\t]*$`,
    'm',
  );
  const end = close.exec(rest);
  const body = end ? rest.slice(0, end.index) : rest;
  return body.replace(/\r?\n$/, '');
}
