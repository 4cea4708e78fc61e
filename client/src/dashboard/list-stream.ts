import { type ServerResponse } from 'node:http';

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
  const { res, signal } = options;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.write(`retry: ${options.retryMs ?? 2_000}\n\n`);
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), options.keepAliveMs ?? 15_000);
  keepAlive.unref();
  try {
    for await (const u of options.updates) {
      if (signal.aborted) break;
      res.write(`event: ${u.snapshot ? 'snapshot' : 'update'}\ndata: ${JSON.stringify(u)}\n\n`);
    }
  } catch (err) {
    if (!signal.aborted) {
      const message = err instanceof Error ? err.message : String(err);
      res.write(`event: failure\ndata: ${JSON.stringify({ message })}\n\n`);
    }
  } finally {
    clearInterval(keepAlive);
    res.end();
  }
}
