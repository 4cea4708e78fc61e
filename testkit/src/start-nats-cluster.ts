import { getFreePort } from './get-free-port';
import { abortReason, delay } from './internal/abort';
import type { NatsServerHandle, NatsServerOptions } from './nats-server-handle';
import { startNatsServer } from './start-nats-server';

/** Options for {@link startNatsCluster}. */
export interface NatsClusterOptions extends Pick<
  NatsServerOptions,
  'binary' | 'startTimeoutMs' | 'stopTimeoutMs' | 'logger'
> {
  /** Number of servers (3 tolerates the loss of one with replicas 3). @default 3 */
  size?: number;
  /** Deadline for the JetStream meta group to elect a leader once all servers run. @default 30000 */
  readyTimeoutMs?: number;
  /** Aborts startup; servers already started are stopped. */
  signal?: AbortSignal;
  /**
   * More arguments for every server, after the cluster's own (e.g. `['--no_advertise']`, so a
   * client that reaches the cluster through a proxy never learns the servers' direct URLs and a
   * cut proxy really partitions it). @default []
   */
  args?: readonly string[];
}

/** A running JetStream cluster of `nats-server` processes on 127.0.0.1. */
export interface NatsClusterHandle {
  /** The servers, in start order (server names `s1`, `s2`, ...). */
  readonly servers: readonly NatsServerHandle[];
  /** Every client URL, for the client's `servers` option. */
  readonly urls: string[];
  /** Stops every server and removes their temp directories. Safe to call twice. */
  stop(): Promise<void>;
}

interface Jsz {
  meta_cluster?: { leader?: string; cluster_size?: number; replicas?: { current?: boolean }[] };
}

/**
 * Starts a JetStream cluster: `size` servers with JetStream (each its own temp store, server name
 * and random cluster port), routed to each other, and resolves once the JetStream meta group has a
 * leader and every server sees all peers — streams with `replicas` up to `size` can be created.
 */
export async function startNatsCluster(
  options: NatsClusterOptions = {},
): Promise<NatsClusterHandle> {
  const size = options.size ?? 3;
  if (!Number.isInteger(size) || size < 1) {
    throw new RangeError(`startNatsCluster: size must be a positive integer, got ${size}`);
  }
  const clusterPorts: number[] = [];
  for (let i = 0; i < size; i++) clusterPorts.push(await getFreePort());
  const routes = clusterPorts.map((p) => `nats-route://127.0.0.1:${p}`).join(',');
  const servers: NatsServerHandle[] = [];
  const stop = async () => {
    await Promise.all(servers.map((s) => s.stop()));
  };
  try {
    // Started together: a clustered JetStream server waits for its peers.
    const started = await Promise.all(
      clusterPorts.map((port, i) =>
        startNatsServer({
          ...(options.binary ? { binary: options.binary } : {}),
          ...(options.startTimeoutMs ? { startTimeoutMs: options.startTimeoutMs } : {}),
          ...(options.stopTimeoutMs ? { stopTimeoutMs: options.stopTimeoutMs } : {}),
          ...(options.logger ? { logger: options.logger } : {}),
          ...(options.signal ? { signal: options.signal } : {}),
          args: [
            '--server_name',
            `s${i + 1}`,
            '--cluster_name',
            'testkit',
            '--cluster',
            `nats://127.0.0.1:${port}`,
            '--routes',
            routes,
            ...(options.args ?? []),
          ],
        }).then((s) => {
          servers.push(s);
          return s;
        }),
      ),
    );
    servers.splice(0, servers.length, ...started);
    const deadline = Date.now() + (options.readyTimeoutMs ?? 30_000);
    for (;;) {
      if (options.signal?.aborted) throw abortReason(options.signal);
      if (await metaReady(started, size)) break;
      if (Date.now() > deadline) {
        throw new Error(
          `JetStream cluster of ${size} did not elect a meta leader within ${options.readyTimeoutMs ?? 30_000} ms`,
        );
      }
      await delay(100, options.signal);
    }
    return { servers: started, urls: started.map((s) => s.url), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function metaReady(servers: readonly NatsServerHandle[], size: number): Promise<boolean> {
  for (const s of servers) {
    try {
      const res = await fetch(`${s.monitorUrl}/jsz`, { signal: AbortSignal.timeout(1_000) });
      if (!res.ok) return false;
      const meta = ((await res.json()) as Jsz).meta_cluster;
      if (!meta?.leader || (meta.cluster_size ?? 0) < size) return false;
    } catch {
      return false;
    }
  }
  return true;
}
