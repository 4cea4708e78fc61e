import { type Job__Output, type Node__Output, type TroupeError } from '@troupe/proto';
import { waitFor } from '@troupe/testkit';
import { type TestCluster } from '@troupe/test-cluster';
import { startJobApiCluster } from './job-api-cluster';

// WatchJobs and WatchNodes end to end: the SDK over gRPC against a real coordinator (the jobs
// and nodes buckets on a real nats-server) with real node agents running Docker sandboxes.

let tc: TestCluster;

beforeAll(async () => {
  tc = await startJobApiCluster();
});
afterAll(async () => {
  await tc?.stop();
});

/** A list as a watch consumer holds it: every message applied in order, and what they were. */
interface LiveView<T> {
  items: Map<string, T>;
  /** Every version of every entry, in arrival order. */
  history: T[];
  snapshots: number;
  removed: string[];
  error?: TroupeError;
  stop: () => void;
}

function follow<U extends { snapshot: boolean }, T>(
  open: (signal: AbortSignal) => AsyncIterable<U>,
  itemsOf: (u: U) => T[],
  removedOf: (u: U) => string[],
  idOf: (t: T) => string,
): LiveView<T> {
  const ctl = new AbortController();
  const view: LiveView<T> = {
    items: new Map(),
    history: [],
    snapshots: 0,
    removed: [],
    stop: () => ctl.abort(),
  };
  void (async () => {
    for await (const u of open(ctl.signal)) {
      if (u.snapshot) {
        view.snapshots++;
        view.items.clear();
      }
      for (const id of removedOf(u)) {
        view.items.delete(id);
        view.removed.push(id);
      }
      for (const t of itemsOf(u)) {
        view.items.set(idOf(t), t);
        view.history.push(t);
      }
    }
  })().catch((err: unknown) => (view.error = err as TroupeError));
  return view;
}

const SPEC = `
name: watched
kind: shell-tasks
concurrency: 1
labels: {suite: list-watch}
tasks: {count: 3, command: "sleep 1; echo task {i}", idPrefix: w}
`;

test('WatchJobs delivers a new job and each state change; a state filter drops it when done', async () => {
  const client = tc.client();
  const all = follow(
    (signal) => client.watchJobs({ labels: { suite: 'list-watch' } }, { signal }),
    (u) => u.jobs,
    (u) => u.removedJobIds,
    (j: Job__Output) => j.jobId,
  );
  const running = follow(
    (signal) => client.watchJobs({ states: ['RUNNING'] }, { signal }),
    (u) => u.jobs,
    (u) => u.removedJobIds,
    (j: Job__Output) => j.jobId,
  );
  try {
    await waitFor(() => all.snapshots === 1 && running.snapshots === 1, {
      timeoutMs: 30_000,
      message: 'first snapshots',
    });
    expect(all.items.size).toBe(0);
    const job = await client.submitJob(SPEC);
    await waitFor(() => all.items.get(job.jobId)?.state === 'SUCCEEDED', {
      timeoutMs: 120_000,
      message: 'the job succeeded in the watched list',
    });
    const states = all.history.filter((j) => j.jobId === job.jobId).map((j) => j.state);
    // Each state change pushed, in order (QUEUED may be overwritten before it is delivered).
    const distinct = [...new Set(states)];
    expect(distinct.slice(-2)).toEqual(['RUNNING', 'SUCCEEDED']);
    expect(['QUEUED', 'RUNNING', 'SUCCEEDED'].slice(3 - distinct.length)).toEqual(distinct);
    expect(all.items.get(job.jobId)?.progress).toMatchObject({ total: 3, done: 3, passed: 3 });
    // Progress is pushed while the job runs, not only its state.
    const done = all.history
      .filter((j) => j.jobId === job.jobId && j.state === 'RUNNING')
      .map((j) => j.progress?.done ?? 0);
    expect(Math.max(...done)).toBeGreaterThanOrEqual(1);

    // The RUNNING-only view saw the job enter and then leave it.
    await waitFor(() => running.removed.includes(job.jobId), {
      timeoutMs: 30_000,
      message: 'the finished job left the RUNNING view',
    });
    expect(running.history.some((j) => j.jobId === job.jobId)).toBe(true);
    expect(running.items.has(job.jobId)).toBe(false);
    expect(all.error ?? running.error).toBeUndefined();
    expect(all.snapshots).toBe(1);
  } finally {
    all.stop();
    running.stop();
  }
});

test('WatchJobs keeps the view at its limit: a newer job pushes the oldest out', async () => {
  const client = tc.client();
  const labels = { suite: 'list-watch-limit' };
  const spec = (name: string) =>
    `name: ${name}\nkind: shell-tasks\nlabels: {suite: list-watch-limit}\ntasks: [{id: a, command: "true"}]\n`;
  const first = await client.submitJob(spec('first'));
  const second = await client.submitJob(spec('second'));
  const view = follow(
    (signal) => client.watchJobs({ labels, limit: 2 }, { signal }),
    (u) => u.jobs,
    (u) => u.removedJobIds,
    (j: Job__Output) => j.jobId,
  );
  try {
    await waitFor(() => view.snapshots === 1, { timeoutMs: 30_000, message: 'snapshot' });
    expect([...view.items.keys()].sort()).toEqual([first.jobId, second.jobId].sort());
    const third = await client.submitJob(spec('third'));
    await waitFor(() => view.items.has(third.jobId) && !view.items.has(first.jobId), {
      timeoutMs: 30_000,
      message: 'the third job replaced the first in the view',
    });
    expect(view.removed).toContain(first.jobId);
    expect(view.items.size).toBe(2);
  } finally {
    view.stop();
  }
});

test('WatchNodes shows a node agent joining, its drain, and its leaving', async () => {
  const client = tc.client();
  const view = follow(
    (signal) => client.watchNodes({ signal }),
    (u) => u.nodes,
    (u) => u.removedHostIds,
    (n: Node__Output) => n.hostId,
  );
  try {
    await waitFor(() => view.snapshots === 1, { timeoutMs: 30_000, message: 'snapshot' });
    expect([...view.items.values()].map((n) => n.state)).toContain('NODE_READY');
    const hostId = `extra-${tc.cluster.slice(-6)}`;
    expect(view.items.has(hostId)).toBe(false);
    const agent = await tc.startNodeAgent({ hostId });
    await waitFor(() => view.items.get(hostId)?.state === 'NODE_READY', {
      timeoutMs: 30_000,
      message: 'the new node agent in the watched list',
    });
    await client.drainNode(hostId, 'list-watch test');
    await waitFor(() => view.items.get(hostId)?.state === 'NODE_DRAINING', {
      timeoutMs: 30_000,
      message: 'the drained node in the watched list',
    });
    await agent.stop();
    await waitFor(() => view.removed.includes(hostId), {
      timeoutMs: 30_000,
      message: 'the stopped node agent left the watched list',
    });
    expect(view.items.has(hostId)).toBe(false);
    expect(view.snapshots).toBe(1);
    expect(view.error).toBeUndefined();
  } finally {
    view.stop();
  }
});

test('unauthenticated or wrongly authenticated watches are refused', async () => {
  const first = async <T>(iter: AsyncIterable<T>) => {
    for await (const m of iter) return m;
    return undefined;
  };
  for (const token of ['', 'x'.repeat(48)]) {
    const client = tc.client({ token });
    await expect(first(client.watchJobs())).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    await expect(first(client.watchNodes())).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  }
  // The right token works.
  const snapshot = await first(tc.client().watchNodes());
  expect(snapshot?.snapshot).toBe(true);
});
