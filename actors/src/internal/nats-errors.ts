import { ErrorReason, hasReason, someCause } from '@troupe/proto';

/** Walks an error's cause chain looking for a NATS error by name. */
function hasName(err: unknown, names: readonly string[]): boolean {
  return someCause(err, (e) => {
    if (!(e instanceof Error)) return false;
    if (names.includes(e.name)) return true;
    const probe = e as unknown as { isNoResponders?: () => boolean };
    return (
      names.includes('NoResponders') &&
      typeof probe.isNoResponders === 'function' &&
      probe.isNoResponders()
    );
  });
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
 * "temporarily unavailable" (API status 503), or a store outage our own requests reported (reason
 * `STORE_UNAVAILABLE`). A request that can never succeed (a message over
 * `max_payload`, a permission violation) is not transient.
 */
export function isTransientNatsError(err: unknown): boolean {
  if (hasName(err, TRANSIENT_NAMES)) return true;
  // Our own requests' "nobody answered" (publishToStream, KvWriter), as nats.js' NoResponders.
  if (hasReason(err, ErrorReason.STORE_UNAVAILABLE)) return true;
  return someCause(
    err,
    (e) =>
      e instanceof Error &&
      e.name === 'JetStreamApiError' &&
      (e as { status?: unknown }).status === 503,
  );
}
