import { type NatsConnection, type Status } from '@nats-io/transport-node';
import { type Logger } from '@troupe/proto';

/**
 * Calls `onStatus` with each status event of `nc` (disconnect, reconnect, ...) until the returned
 * function is called or the connection closes. A listener that throws is logged, not fatal.
 */
export function watchConnectionStatus(
  nc: NatsConnection,
  onStatus: (status: Status) => void,
  log: Logger,
): () => void {
  const statuses = nc.status();
  let stopped = false;
  void (async () => {
    for await (const s of statuses) {
      if (stopped) return;
      try {
        onStatus(s);
      } catch (err) {
        log.warn({ err }, 'connection status listener failed');
      }
    }
  })();
  return () => {
    stopped = true;
    // nats.js returns a QueuedIterator, whose stop() ends the loop and unregisters it at once.
    (statuses as { stop?: () => void }).stop?.();
  };
}
