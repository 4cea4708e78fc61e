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
