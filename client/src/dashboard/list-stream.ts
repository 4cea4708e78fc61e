import { type ServerResponse } from 'node:http';
import { serveSse } from './sse';

/** One message of a list stream, as the browser receives it (`data:` of an SSE message). */
export interface BrowserListUpdate {
  /** The whole list (replaces what the page shows) when true; changes only otherwise. */
  snapshot: boolean;
  /** Entries that appeared or changed, whole. */
  items: unknown[];
  /** Ids of entries that left the list. */
  removed: string[];
  /** The server's clock when the update was sent, Unix ms. */
  nowMs: number;
}

/** What {@link streamList} needs. */
export interface ListStreamOptions {
  /** The updates to relay (a job API watch mapped to browser entries). */
  updates: AsyncIterable<BrowserListUpdate>;
  res: ServerResponse;
  /** Aborted when the browser goes away or the server stops. */
  signal: AbortSignal;
  /** Comment line interval that keeps proxies from closing an idle stream. @default 15000 */
  keepAliveMs?: number;
  /** Reconnect delay asked of the browser after the stream ends. @default 2000 */
  retryMs?: number;
}

/**
 * Relays a list watch (WatchJobs, WatchNodes) as server-sent events: `snapshot` events carry the
 * whole list, `update` events the changes since. There is nothing to resume: an `EventSource`
 * that reconnects — after the job API stream broke, a `failure` event, or a server restart — gets
 * a fresh snapshot, so the page never shows a list that drifted from the cluster's.
 */
export async function streamList(options: ListStreamOptions): Promise<void> {
  const { signal } = options;
  await serveSse({ ...options, retryMs: options.retryMs ?? 2_000 }, async (send) => {
    for await (const u of options.updates) {
      if (signal.aborted) break;
      send({ event: u.snapshot ? 'snapshot' : 'update', data: u });
    }
  });
}
