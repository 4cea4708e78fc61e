/** Longest rendering of a value inside an error message. */
const MAX_VALUE_CHARS = 64;

/**
 * Renders a value for an error message on one line and at most a few dozen characters: strings
 * JSON-quoted, numbers as written, objects as truncated JSON. Never throws.
 */
export function describeValue(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return truncate(JSON.stringify(value));
    case 'number':
    case 'boolean':
      return String(value);
    case 'bigint':
      return `${value}n`;
    case 'undefined':
      return 'undefined';
    case 'symbol':
      return truncate(value.toString());
    case 'function':
      return 'a function';
    default:
      break;
  }
  if (value === null) return 'null';
  try {
    const json = JSON.stringify(value, (_key, v: unknown) =>
      typeof v === 'bigint' ? `${v}n` : v,
    ) as string | undefined;
    return json === undefined ? 'an object' : truncate(json);
  } catch {
    return Array.isArray(value) ? `an array of ${value.length}` : 'an object';
  }
}

function truncate(text: string): string {
  if (text.length <= MAX_VALUE_CHARS) return text;
  return `${dropTrailingHighSurrogate(text.slice(0, MAX_VALUE_CHARS - 1))}…`;
}

/** Drops a high surrogate left alone at the end of a sliced string. */
export function dropTrailingHighSurrogate(text: string): string {
  const last = text.charCodeAt(text.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? text.slice(0, -1) : text;
}
