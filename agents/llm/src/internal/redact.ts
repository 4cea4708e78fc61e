/** What replaces a secret in text. */
export const REDACTED = '[redacted]';

// Shapes of well-known provider keys, redacted even when they are not the key in use (a provider
// may echo a different key it found in the request).
const KEY_SHAPES = /\b(sk|pk|rk)-[A-Za-z0-9_-]{8,}/g;

/**
 * `text` with every occurrence of `secret` (when given) and anything shaped like a provider API
 * key replaced by {@link REDACTED}. Applied to every provider message before it reaches an error,
 * a log line or a call record.
 */
export function redact(text: string, secret: string | undefined): string {
  let out = text;
  if (secret !== undefined && secret.length > 0) out = out.split(secret).join(REDACTED);
  return out.replace(KEY_SHAPES, REDACTED);
}
