import { ErrorCode, isTroupeError, TroupeError } from '@troupe/proto';

/** The HTTP status a dockerode error carries, if any. */
export function dockerStatus(err: unknown): number | undefined {
  if (typeof err === 'object' && err !== null && 'statusCode' in err) {
    const code = (err as { statusCode?: unknown }).statusCode;
    return typeof code === 'number' ? code : undefined;
  }
  return undefined;
}

/** The engine's own message (`json.message`) or the error's. */
function engineMessage(err: unknown): string {
  if (typeof err === 'object' && err !== null) {
    const json = (err as { json?: unknown }).json;
    if (typeof json === 'object' && json !== null && 'message' in json) {
      return String(json.message);
    }
    if (json instanceof Uint8Array || typeof json === 'string') return String(json).trim();
    if ('message' in err) return String(err.message);
  }
  return String(err);
}

/**
 * A Troupe error for a failed Docker call: 404 → `NOT_FOUND`, 409 → `ALREADY_EXISTS`, 400 →
 * `INVALID_ARGUMENT`, aborts keep their code, anything else (5xx, socket errors) → `UNAVAILABLE`
 * (retryable). The message names what was attempted and quotes the engine.
 */
export function dockerError(what: string, err: unknown): TroupeError {
  if (isTroupeError(err)) return err;
  const name =
    typeof err === 'object' && err !== null ? (err as { name?: unknown }).name : undefined;
  if (name === 'AbortError') {
    return new TroupeError(ErrorCode.CANCELLED, `${what}: cancelled`, { cause: err });
  }
  const status = dockerStatus(err);
  const message = `${what}: ${engineMessage(err)}`;
  const details = status === undefined ? undefined : { dockerStatus: status };
  switch (status) {
    case 404:
      return new TroupeError(ErrorCode.NOT_FOUND, message, { cause: err, details });
    case 409:
      return new TroupeError(ErrorCode.ALREADY_EXISTS, message, { cause: err, details });
    case 400:
      return new TroupeError(ErrorCode.INVALID_ARGUMENT, message, { cause: err, details });
    default:
      return new TroupeError(ErrorCode.UNAVAILABLE, message, { cause: err, details });
  }
}

/** Runs a Docker call, ignoring "not found" (for idempotent removal). */
export async function ignoreNotFound(call: () => Promise<unknown>): Promise<void> {
  try {
    await call();
  } catch (err) {
    if (dockerStatus(err) !== 404) throw err;
  }
}
