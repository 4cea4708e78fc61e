import { TroupeError } from '@troupe/proto';
import { type HostRecord } from '../host-registry';

/** What NodeService reads: the coordinator's host registry (present on the leader only). */
export interface NodeSource {
  list(): HostRecord[];
  drain(hostId: string, reason?: string): Promise<HostRecord>;
  /** Host ids as their persisted registrations change; ends when `signal` aborts. */
  changes(signal: AbortSignal): AsyncIterable<string>;
  /** Interval at which hosts heartbeat. */
  readonly heartbeatMs: number;
}

/** What a caller passes to {@link watchNodeList}. */
export interface WatchNodeListOptions {
  /** The leader's registry; undefined (or another one) once this process stops leading. */
  source: () => NodeSource | undefined;
  /** Ends the watch. */
  signal: AbortSignal;
  /**
   * How often slot usage and heartbeats (kept in memory, not in the bucket) are compared with
   * what was sent. @default the registry's heartbeat interval
   */
  sweepMs?: number;
  /** A node whose heartbeat moved this much since it was last sent is sent again. @default 5000 */
  heartbeatResendMs?: number;
}

/** One change of the node list: every node when `snapshot`, else what changed or left. */
export interface NodeListChange {
  snapshot: boolean;
  /** Sorted by host id. */
  nodes: HostRecord[];
  removed: string[];
}

/**
 * The node list as a stream (WatchNodes): a snapshot of the registry, then its changes. A change
 * of a persisted registration (a node registering, drained, declared dead, leaving) arrives at
 * once through the watch of the nodes bucket ({@link NodeSource.changes}); slot usage and
 * heartbeats live in the leader's memory only, so they are compared with what was sent every
 * `sweepMs`. What is sent is always the registry's own view. The stream fails with `UNAVAILABLE`
 * once this coordinator no longer leads.
 */
export async function* watchNodeList(
  options: WatchNodeListOptions,
): AsyncGenerator<NodeListChange> {
  const { signal } = options;
  const registry = leaderRegistry(options.source);
  const sweepMs = options.sweepMs ?? registry.heartbeatMs;
  const resendMs = options.heartbeatResendMs ?? 5_000;
  const sent = new Map<string, { key: string; heartbeatMs: number }>();
  const keyOf = (h: HostRecord) => JSON.stringify([h.state, h.reason ?? '', h.info, h.load]);

  // Wakes the loop below: a bucket change, or the end of the watch.
  let wake: (() => void) | undefined;
  let dirty = false;
  const poke = () => {
    dirty = true;
    wake?.();
  };
  const watch = new AbortController();
  const stopWatch = () => {
    watch.abort(signal.reason);
    wake?.();
  };
  signal.addEventListener('abort', stopWatch, { once: true });
  let watchError: unknown;
  const watching = (async () => {
    for await (const _hostId of registry.changes(watch.signal)) poke();
  })().catch((err: unknown) => {
    watchError = err;
    poke();
  });

  try {
    const first = sorted(registry.list());
    for (const h of first) {
      sent.set(h.info.hostId, { key: keyOf(h), heartbeatMs: h.lastHeartbeatUnixMs });
    }
    yield { snapshot: true, nodes: first, removed: [] };
    while (!signal.aborted) {
      if (!dirty) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => wake?.(), sweepMs);
          wake = () => {
            wake = undefined;
            clearTimeout(timer);
            resolve();
          };
        });
      }
      dirty = false;
      if (signal.aborted) return;
      if (watchError !== undefined) {
        throw new TroupeError('UNAVAILABLE', 'the watch of the nodes bucket stopped', {
          cause: watchError,
        });
      }
      if (options.source() !== registry) {
        throw new TroupeError(
          'UNAVAILABLE',
          'this coordinator stopped leading; node information is served by the leader',
        );
      }
      const nodes: HostRecord[] = [];
      const seen = new Set<string>();
      for (const h of sorted(registry.list())) {
        seen.add(h.info.hostId);
        const before = sent.get(h.info.hostId);
        const key = keyOf(h);
        if (before && before.key === key && h.lastHeartbeatUnixMs - before.heartbeatMs < resendMs) {
          continue;
        }
        sent.set(h.info.hostId, { key, heartbeatMs: h.lastHeartbeatUnixMs });
        nodes.push(h);
      }
      const removed = [...sent.keys()].filter((id) => !seen.has(id));
      for (const id of removed) sent.delete(id);
      if (nodes.length > 0 || removed.length > 0) yield { snapshot: false, nodes, removed };
    }
  } finally {
    signal.removeEventListener('abort', stopWatch);
    watch.abort(new TroupeError('CANCELLED', 'the node watch ended'));
    await watching;
  }
}

function leaderRegistry(source: () => NodeSource | undefined): NodeSource {
  const nodes = source();
  if (!nodes) {
    throw new TroupeError(
      'UNAVAILABLE',
      'this coordinator is not the leader; node information is served by the leader',
    );
  }
  return nodes;
}

function sorted(hosts: HostRecord[]): HostRecord[] {
  return hosts.sort((a, b) => (a.info.hostId < b.info.hostId ? -1 : 1));
}
