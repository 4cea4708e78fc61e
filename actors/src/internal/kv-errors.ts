import { someCause } from '@troupe/proto';

/**
 * True when a KV/JetStream write failed its compare-and-set: the server answers
 * "wrong last sequence" (JetStream API error 10071) when the expected revision is stale, and
 * "key exists" on create of a live key.
 */
export function isWrongLastSequence(err: unknown): boolean {
  return someCause(err, (e) => {
    if (!(e instanceof Error)) return false;
    const m = e.message.toLowerCase();
    if (m.includes('wrong last sequence') || m.includes('key exists')) return true;
    return (e as { api_error?: { err_code?: number } }).api_error?.err_code === 10071;
  });
}
