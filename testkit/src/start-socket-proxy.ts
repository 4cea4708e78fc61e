import net from 'node:net';

/** A Unix socket in front of another that a test takes away and brings back. */
export interface SocketProxyHandle {
  /** The proxy's socket file (there while the proxy is up). */
  readonly socketPath: string;
  /** Listens again on {@link socketPath} (no-op while up). */
  up(): Promise<void>;
  /** Cuts every open connection and removes the socket file (no-op while down). */
  down(): Promise<void>;
}

/**
 * Starts a Unix socket proxy at `socketPath` forwarding to the socket at `target`. A client
 * pointed at it sees, on `down()`, what it sees of a daemon restart: open connections cut, then
 * `connect ENOENT` (the socket file is gone), then answers again after `up()`. Used in front of
 * the Docker engine's socket, whose daemon (and containers) keep running meanwhile. Call `down()`
 * to stop it.
 */
export async function startSocketProxy(
  socketPath: string,
  target: string,
): Promise<SocketProxyHandle> {
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  let server: net.Server | undefined;
  const up = async (): Promise<void> => {
    if (server) return;
    const s = net.createServer((client) => {
      track(client);
      const upstream = net.connect(target);
      track(upstream);
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    server = s;
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(socketPath, () => {
        s.off('error', reject);
        resolve();
      });
    });
  };
  const down = async (): Promise<void> => {
    const s = server;
    server = undefined;
    if (!s) return;
    for (const c of sockets) c.destroy();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  await up();
  return { socketPath, up, down };
}
