import { TroupeError } from '@troupe/proto';

const decoder = new TextDecoder();

/** JSON → bytes for NATS payloads and KV values. */
export function encodeJson(value: unknown): Uint8Array {
  // Buffer.from beats TextEncoder.encode for the short strings of actor messages.
  return Buffer.from(JSON.stringify(value ?? null), 'utf8');
}

/** Bytes → JSON; a payload that is not JSON is an INVALID_ARGUMENT, never a crash. */
export function decodeJson(data: Uint8Array): unknown {
  if (data.length === 0) return undefined;
  const text = decoder.decode(data);
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new TroupeError('INVALID_ARGUMENT', `payload: must be JSON (${(err as Error).message})`, {
      cause: err,
    });
  }
}
