/** Walks an error's cause chain looking for a NATS error by name. */
function hasName(err: unknown, names: readonly string[]): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (names.includes(e.name)) return true;
    const probe = e as unknown as { isNoResponders?: () => boolean };
    if (names.includes('NoResponders') && typeof probe.isNoResponders === 'function') {
      if (probe.isNoResponders()) return true;
    }
  }
  return false;
}

/** True when a NATS request found no subscriber on the subject. */
export function isNoResponders(err: unknown): boolean {
  return hasName(err, ['NoResponders', 'NoRespondersError']);
}

/** True when a NATS request timed out. */
export function isNatsTimeout(err: unknown): boolean {
  return hasName(err, ['TimeoutError']);
}

/** Names of NATS client errors that say "not reachable now", not "wrong request". */
const TRANSIENT_NAMES = [
  'NoResponders',
  'NoRespondersError',
  'TimeoutError',
  'JetStreamNotEnabled',
  'ClosedConnectionError',
  'DrainingConnectionError',
  'ConnectionError',
] as const;

/**
 * True when an error from NATS or JetStream is transient: nobody answered (a stream electing a
 * leader answers nothing), a timeout, a closed or reconnecting connection, or JetStream's own
 * "temporarily unavailable" (API status 503). A request that can never succeed (a message over
 * `max_payload`, a permission violation) is not transient.
 */
export function isTransientNatsError(err: unknown): boolean {
  if (hasName(err, TRANSIENT_NAMES)) return true;
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const status = (e as { status?: unknown }).status;
    if (e.name === 'JetStreamApiError' && status === 503) return true;
  }
  return false;
}
