import net from 'node:net';

/**
 * Asks the kernel for a free TCP port by binding port 0 on `host` and closing the listener again.
 * Another process may take the port before the caller binds it, so callers that spawn servers on
 * the returned port should retry on "address already in use".
 *
 * @param host - Interface to bind. @default '127.0.0.1'
 */
export function getFreePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error(`could not read the port bound on ${host}`));
        return;
      }
      server.close((err) => (err ? reject(err) : resolve(address.port)));
    });
  });
}
