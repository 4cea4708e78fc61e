import net from 'node:net';

/** Options for {@link startTcpProxy}. */
export interface TcpProxyOptions {
  /** Where connections are forwarded to. */
  target: { host?: string; port: number };
}

/** A running TCP proxy on 127.0.0.1 that a test can cut, to partition one client from a server. */
export interface TcpProxyHandle {
  /** Listening port (random). */
  readonly port: number;
  /** `nats://127.0.0.1:<port>`, for a NATS client that should reach the target through here. */
  readonly url: string;
  /** Whether the proxy is cut now. */
  readonly isCut: boolean;
  /**
   * Cuts the link: open connections are closed at once on both sides, and every
   * connection made until {@link restore} is closed as soon as it is accepted.
   */
  cut(): void;
  /** Forwards new connections again. */
  restore(): void;
  /** Closes the listener and every connection. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Starts a TCP proxy on a random port of 127.0.0.1 forwarding to `target`. A test connects one
 * client through it and calls `cut()` / `restore()` to simulate that client's network partition
 * while every other client keeps its direct connection.
 */
export async function startTcpProxy(options: TcpProxyOptions): Promise<TcpProxyHandle> {
  const targetHost = options.target.host ?? '127.0.0.1';
  const sockets = new Set<net.Socket>();
  let cut = false;
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const server = net.createServer((client) => {
    track(client);
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = net.connect({ host: targetHost, port: options.target.port });
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as net.AddressInfo).port;
  let stopped: Promise<void> | undefined;
  return {
    port,
    url: `nats://127.0.0.1:${port}`,
    get isCut() {
      return cut;
    },
    cut() {
      cut = true;
      for (const s of sockets) s.destroy();
    },
    restore() {
      cut = false;
    },
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      });
      return stopped;
    },
  };
}
