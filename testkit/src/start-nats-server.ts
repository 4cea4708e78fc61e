import { launchNatsServer } from './internal/nats-server-process';
import type { NatsServerHandle, NatsServerOptions } from './nats-server-handle';

/**
 * Starts `nats-server` on 127.0.0.1 with random free ports and (by default) JetStream in a temp
 * store directory, and resolves once the server answers its health check and accepts TCP
 * connections. Retries up to three times with new ports when a random port turns out to be
 * taken.
 *
 * @throws {@link MissingBinaryError} when the binary is not installed (the message names
 * `apt-get install -y nats-server`).
 * @throws Error with the tail of the server's output when it exits or misses the start deadline.
 */
export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServerHandle> {
  return launchNatsServer(options);
}
