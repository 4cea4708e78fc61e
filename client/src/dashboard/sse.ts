import { type ServerResponse } from 'node:http';

/** One server-sent event. */
export interface SseMessage {
  /** The `event:` name the page listens for. */
  event: string;
  /** Sent as JSON on one `data:` line. */
  data: unknown;
  /** `id:`, which a reconnecting `EventSource` sends back as `Last-Event-ID`. */
  id?: string | number;
}

/** What {@link serveSse} needs. */
export interface SseOptions {
  res: ServerResponse;
  /** Aborted when the browser goes away or the server stops. */
  signal: AbortSignal;
  /** Reconnect delay asked of the browser after the stream ends. */
  retryMs: number;
  /** Comment line interval that keeps proxies from closing an idle stream. @default 15000 */
  keepAliveMs?: number;
}

/**
 * Answers a request with a server-sent event stream fed by `produce`, which sends messages until
 * it returns. An error it throws (unless the browser left) becomes a `failure` event carrying the
 * message; the page shows it and its `EventSource` reconnects after `retryMs`. The response ends
 * when `produce` does.
 */
export async function serveSse(
  options: SseOptions,
  produce: (send: (message: SseMessage) => void) => Promise<void>,
): Promise<void> {
  const { res, signal } = options;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.write(`retry: ${options.retryMs}\n\n`);
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), options.keepAliveMs ?? 15_000);
  keepAlive.unref();
  const send = (m: SseMessage): void => {
    const id = m.id === undefined ? '' : `id: ${m.id}\n`;
    res.write(`${id}event: ${m.event}\ndata: ${JSON.stringify(m.data)}\n\n`);
  };
  try {
    await produce(send);
  } catch (err) {
    if (!signal.aborted) {
      send({
        event: 'failure',
        data: { message: err instanceof Error ? err.message : String(err) },
      });
    }
  } finally {
    clearInterval(keepAlive);
    res.end();
  }
}

/** `source`'s items passed through `fn`, as they arrive. */
export async function* mapAsync<T, U>(
  source: AsyncIterable<T>,
  fn: (t: T) => U,
): AsyncGenerator<U> {
  for await (const t of source) yield fn(t);
}
