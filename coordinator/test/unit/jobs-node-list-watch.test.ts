import { type HostInfo } from '@troupe/actors';
import { waitFor } from '@troupe/testkit';
import { type HostRecord } from '../../src/host-registry';
import {
  type NodeListChange,
  type NodeSource,
  watchNodeList,
} from '../../src/jobs/node-list-watch';

// The diffing of WatchNodes over an in-memory registry (the bucket watch and the gRPC stream are
// covered by client/test/integration/list-watch.int.test.ts).

function host(hostId: string, heartbeatMs = 1_000): HostRecord {
  const info: HostInfo = {
    hostId,
    incarnation: 'i1',
    kinds: ['sandbox'],
    slots: { sandbox: 4 },
    cpu: 2,
    memMb: 1024,
    backends: ['docker'],
    labels: {},
  };
  return { info, state: 'ALIVE', load: {}, lastHeartbeatUnixMs: heartbeatMs };
}

/** A registry whose changes the test makes, with a bucket-change trigger it fires. */
class FakeRegistry implements NodeSource {
  readonly hosts = new Map<string, HostRecord>();
  readonly heartbeatMs = 60_000;
  private poke?: () => void;

  list(): HostRecord[] {
    return [...this.hosts.values()].map((h) => ({ ...h }));
  }
  async drain(hostId: string): Promise<HostRecord> {
    const h = this.hosts.get(hostId)!;
    h.state = 'DRAINING';
    this.changed();
    return h;
  }
  changed(): void {
    this.poke?.();
  }
  async *changes(signal: AbortSignal): AsyncGenerator<string> {
    while (!signal.aborted) {
      await new Promise<void>((resolve) => {
        this.poke = resolve;
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
      if (!signal.aborted) yield 'key';
    }
  }
}

function collect(source: () => NodeSource | undefined, options: { sweepMs?: number } = {}) {
  const ctl = new AbortController();
  const got: NodeListChange[] = [];
  const out: { error?: unknown } = {};
  const done = (async () => {
    for await (const c of watchNodeList({ source, signal: ctl.signal, ...options })) got.push(c);
  })().catch((err: unknown) => (out.error = err));
  return { got, out, stop: () => ctl.abort(), done };
}

test('a snapshot sorted by host id, then only what changed, and removals', async () => {
  const reg = new FakeRegistry();
  reg.hosts.set('b', host('b'));
  reg.hosts.set('a', host('a'));
  const w = collect(() => reg);
  try {
    await waitFor(() => w.got.length === 1, { timeoutMs: 5_000 });
    expect(w.got[0]).toMatchObject({ snapshot: true, removed: [] });
    expect(w.got[0]!.nodes.map((n) => n.info.hostId)).toEqual(['a', 'b']);

    await reg.drain('b');
    await waitFor(() => w.got.length === 2, { timeoutMs: 5_000 });
    expect(w.got[1]!.snapshot).toBe(false);
    expect(w.got[1]!.nodes.map((n) => [n.info.hostId, n.state])).toEqual([['b', 'DRAINING']]);

    reg.hosts.delete('a');
    reg.hosts.set('c', host('c'));
    reg.changed();
    await waitFor(() => w.got.length === 3, { timeoutMs: 5_000 });
    expect(w.got[2]!.nodes.map((n) => n.info.hostId)).toEqual(['c']);
    expect(w.got[2]!.removed).toEqual(['a']);
  } finally {
    w.stop();
    await w.done;
  }
  expect(w.out.error).toBeUndefined();
});

test('slot usage and a heartbeat 5 s newer are found by the sweep', async () => {
  const reg = new FakeRegistry();
  reg.hosts.set('a', host('a', 1_000));
  const w = collect(() => reg, { sweepMs: 20 });
  try {
    await waitFor(() => w.got.length === 1, { timeoutMs: 5_000 });
    reg.hosts.get('a')!.lastHeartbeatUnixMs = 3_000; // sent along with the load change
    reg.hosts.get('a')!.load = { sandbox: 2 };
    await waitFor(() => w.got.length === 2, { timeoutMs: 5_000 });
    expect(w.got[1]!.nodes[0]).toMatchObject({ load: { sandbox: 2 }, lastHeartbeatUnixMs: 3_000 });
    const sweeps = w.got.length;
    reg.hosts.get('a')!.lastHeartbeatUnixMs = 8_000;
    await waitFor(() => w.got.length === sweeps + 1, { timeoutMs: 5_000 });
    expect(w.got.at(-1)!.nodes[0]!.lastHeartbeatUnixMs).toBe(8_000);
  } finally {
    w.stop();
    await w.done;
  }
});

test('UNAVAILABLE off the leader, and once this coordinator stops leading', async () => {
  const none = collect(() => undefined);
  await none.done;
  expect(none.out.error).toMatchObject({ code: 'UNAVAILABLE' });

  const reg = new FakeRegistry();
  let leading: NodeSource | undefined = reg;
  const w = collect(() => leading);
  await waitFor(() => w.got.length === 1, { timeoutMs: 5_000 });
  leading = undefined;
  reg.changed();
  await w.done;
  expect(w.out.error).toMatchObject({ code: 'UNAVAILABLE' });
});
