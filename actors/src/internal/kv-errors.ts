/**
 * True when a KV/JetStream write failed its compare-and-set: the server answers
 * "wrong last sequence" (JetStream API error 10071) when the expected revision is stale, and
 * "key exists" on create of a live key.
 */
export function isWrongLastSequence(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const m = e.message.toLowerCase();
    if (m.includes('wrong last sequence') || m.includes('key exists')) return true;
    const code = (e as { api_error?: { err_code?: number } }).api_error?.err_code;
    if (code === 10071) return true;
  }
  return false;
}
