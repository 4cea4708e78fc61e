import { dropTrailingHighSurrogate } from './describe-value';

/** Longest error message put on the wire, in encoded characters. */
export const MAX_WIRE_MESSAGE_CHARS = 8192;
/** Longest error details JSON put on the wire, in characters. */
export const MAX_WIRE_DETAILS_CHARS = 16384;
/**
 * Longest gRPC status message, in URI-encoded characters. A gRPC error travels in one trailer
 * (status, message and the Troupe entries), and C-core clients (Python, Go, C++) refuse a
 * trailer over their 8 KiB default metadata limit with RESOURCE_EXHAUSTED, hiding the real
 * error; this cap and {@link MAX_GRPC_DETAILS_CHARS} keep the whole trailer near 6.5 KiB.
 */
export const MAX_GRPC_MESSAGE_CHARS = 2048;
/** Longest error details JSON in a gRPC trailer, in characters (see {@link MAX_GRPC_MESSAGE_CHARS}). */
export const MAX_GRPC_DETAILS_CHARS = 4096;

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const NON_ASCII_OR_DEL = /[\u007f-\uffff]/g;

/** Replaces lone UTF-16 surrogates with U+FFFD so the text can be UTF-8 or URI encoded. */
export function toWellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, '\ufffd');
}

/**
 * JSON with every character outside printable ASCII escaped as `\uXXXX`: one line, valid in a NATS
 * header and a gRPC ASCII metadata value, and `JSON.parse` gives back exactly the original value
 * (lone surrogates included). Returns `undefined` when the value cannot be serialised (cycles,
 * `undefined`). BigInts are written as decimal strings.
 */
export function toAsciiJson(value: unknown): string | undefined {
  let json: string | undefined;
  try {
    // Typed `string`, but `undefined` for `undefined`, functions and symbols.
    json = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  } catch {
    return undefined;
  }
  return json?.replace(
    NON_ASCII_OR_DEL,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/**
 * Shortens `text` (appending `…`) until `encode(text)` is at most `maxChars` long. Keeps surrogate
 * pairs whole.
 */
export function truncateEncoded(
  text: string,
  maxChars: number,
  encode: (text: string) => string,
): string {
  let encodedLength = encode(text).length;
  if (encodedLength <= maxChars) return text;
  let keep = text.length;
  while (keep > 0) {
    // Shrink proportionally to the overshoot; always by at least one character.
    keep = Math.min(keep - 1, Math.floor((keep * maxChars) / encodedLength) - 1);
    const candidate = `${dropTrailingHighSurrogate(text.slice(0, Math.max(keep, 0)))}…`;
    encodedLength = encode(candidate).length;
    if (encodedLength <= maxChars) return candidate;
  }
  return '…';
}
