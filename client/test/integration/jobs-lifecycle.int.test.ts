import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server, type Socket, connect } from 'node:net';
import * as path from 'node:path';
import { TroupeClient } from '@troupe/client';
import { type JobEvent__Output } from '@troupe/proto';
import { ensureDocker, type NatsServerHandle, randomClusterName, waitFor } from '@troupe/testkit';
import { TestCluster } from '@troupe/test-cluster';
import { startJobApiCluster } from './job-api-cluster';

// Watch reconnection, cancellation and coordinator restarts, against a real coordinator and node
// agent.

let server: NatsServerHandle;
let tc: TestCluster;

beforeAll(async () => {
  tc = await startJobApiCluster();
  server = tc.server;
});
afterAll(async () => {
  await tc?.stop();
  await server?.stop();
});

async function drain(iter: AsyncIterable<JobEvent__Output>): Promise<JobEvent__Output[]> {
  const out: JobEvent__Output[] = [];
  for await (const e of iter) out.push(e);
  return out;
}

/** A TCP proxy to `target` whose connections can all be cut at once. */
async function startProxy(target: () => string): Promise<{
  address: string;
  cut(): void;
  close(): Promise<void>;
}> {
  const sockets = new Set<Socket>();
  const proxy: Server = createServer((inbound) => {
    const [host, port] = target().split(':');
    const outbound = connect(Number(port), host);
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const addr = proxy.address();
  if (addr === null || typeof addr === 'string') throw new Error('no proxy address');
  return {
    address: `127.0.0.1:${addr.port}`,
    cut: () => {
      for (const s of sockets) s.destroy();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    },
  };
}

test('a watcher whose connection breaks reconnects and gets every event exactly once', async () => {
  const proxy = await startProxy(() => tc.address);
  try {
    const job = await tc.client().submitJob({
      kind: 'shell-tasks',
      concurrency: 2,
      tasks: { count: 6, command: 'sleep 0.4; echo {i}' },
    });
    const watcher = tc.client({ address: proxy.address, retry: { initialBackoffMs: 50 } });
    const reconnects: number[] = [];
    const seen: JobEvent__Output[] = [];
    for await (const e of watcher.watch(job.jobId, {
      signal: AbortSignal.timeout(90_000),
      onReconnect: ({ fromSequence }) => reconnects.push(fromSequence),
    })) {
      seen.push(e);
      // Cut the connection twice mid-job: after the 3rd and the 9th event.
      if (seen.length === 3 || seen.length === 9) proxy.cut();
    }
    expect(reconnects.length).toBeGreaterThanOrEqual(2);
    expect(seen.map((e) => e.sequence)).toEqual(seen.map((_, i) => i + 1));
    expect(seen.at(-1)?.type).toBe('JOB_FINISHED');
    // The same log as an undisturbed late watcher sees.
    const replay = await drain(tc.client().watch(job.jobId));
    expect(replay.map((e) => [e.sequence, e.type, e.taskId])).toEqual(
      seen.map((e) => [e.sequence, e.type, e.taskId]),
    );
  } finally {
    await proxy.close();
  }
});

test('cancel stops running tasks, destroys their sandboxes, and ends the job CANCELLED', async () => {
  const client = tc.client();
  const job = await client.submitJob({
    kind: 'shell-tasks',
    concurrency: 2,
    tasks: { count: 4, command: 'sleep 300' },
  });
  // Two sandboxes run the job's first two tasks.
  await waitFor(async () => (await tc.containers([`troupe.job=${job.jobId}`])).length === 2, {
    timeoutMs: 30_000,
    message: 'two running sandboxes',
  });
  const t0 = Date.now();
  const cancelled = await client.cancelJob(job.jobId, 'user');
  expect(cancelled.state).toBe('RUNNING');
  expect(cancelled.reason).toBe('cancelling: user');
  const events = await drain(client.watch(job.jobId, { signal: AbortSignal.timeout(60_000) }));
  expect(events.some((e) => e.type === 'JOB_CANCEL_REQUESTED')).toBe(true);
  expect(JSON.parse(events.at(-1)!.payloadJson)).toMatchObject({ state: 'CANCELLED' });
  await waitFor(async () => (await tc.containers([`troupe.job=${job.jobId}`])).length === 0, {
    timeoutMs: 20_000,
    message: 'the job sandboxes destroyed',
  });
  // Well before the 300 s the commands would have run.
  expect(Date.now() - t0).toBeLessThan(30_000);
  const results = await client.getResults(job.jobId);
  expect(results.state).toBe('CANCELLED');
  expect(results.tasks.map((t) => t.status)).toEqual([
    'TASK_CANCELLED',
    'TASK_CANCELLED',
    'TASK_CANCELLED',
    'TASK_CANCELLED',
  ]);
  // The aggregate counts them, on the wire and in the JOB_FINISHED payload alike.
  expect(results.aggregate?.cancelled).toBe(4);
  expect(JSON.parse(events.at(-1)!.payloadJson)).toMatchObject({ aggregate: { cancelled: 4 } });
  // Only the two running tasks ever started.
  expect(events.filter((e) => e.type === 'TASK_STARTED')).toHaveLength(2);
});

test('a coordinator restarted mid-job resumes it; completed tasks are not run again', async () => {
  const job = await tc.client().submitJob({
    kind: 'shell-tasks',
    concurrency: 2,
    retries: { max: 2, backoffMs: 100 },
    tasks: { count: 8, command: 'sleep 0.7; echo {i}' },
  });
  const client = tc.client();
  // Restart once a few tasks have been graded and others are running.
  const before: JobEvent__Output[] = [];
  for await (const e of client.watch(job.jobId, { signal: AbortSignal.timeout(60_000) })) {
    before.push(e);
    if (before.filter((x) => x.type === 'TASK_GRADED').length >= 3) break;
  }
  const gradedBefore = new Set(before.filter((e) => e.type === 'TASK_GRADED').map((e) => e.taskId));
  await tc.restartCoordinator();

  const after = tc.client(); // the new coordinator listens on a new port
  const events = await drain(after.watch(job.jobId, { signal: AbortSignal.timeout(120_000) }));
  expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
  expect(JSON.parse(events.at(-1)!.payloadJson)).toMatchObject({ state: 'SUCCEEDED' });
  const results = await after.getResults(job.jobId);
  expect(results.tasks.every((t) => t.status === 'TASK_PASSED')).toBe(true);
  expect(results.tasks).toHaveLength(8);
  // Tasks graded before the restart started exactly once and were graded exactly once.
  for (const id of gradedBefore) {
    expect({
      id,
      started: events.filter((e) => e.type === 'TASK_STARTED' && e.taskId === id).length,
    }).toEqual({ id, started: 1 });
    expect({
      id,
      graded: events.filter((e) => e.type === 'TASK_GRADED' && e.taskId === id).length,
    }).toEqual({ id, graded: 1 });
  }
  // Every task was graded exactly once overall.
  expect(events.filter((e) => e.type === 'TASK_GRADED')).toHaveLength(8);
  await waitFor(async () => (await tc.containers([`troupe.job=${job.jobId}`])).length === 0, {
    timeoutMs: 30_000,
  });
});

const fixture = path.resolve(__dirname, '../fixtures/coordinator-process.js');
const builtPackages = existsSync(path.resolve(__dirname, '../../../benchmarks/dist/index.js'));

/** Starts the fixture coordinator process; resolves with it and its job API port. */
async function coordinatorProcess(
  url: string,
  cluster: string,
  token: string,
): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [fixture, url, cluster, token], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /READY (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`coordinator exited ${code}: ${err}`)));
  });
  return { child, port };
}

(builtPackages ? test : test.skip)(
  'kill -9 of the coordinator process mid-job: a new coordinator completes the job',
  async () => {
    const cluster = randomClusterName();
    const token = 'kill-test-token-0123456789';
    let first = await coordinatorProcess(server.url, cluster, token);
    const nodes = await TestCluster.start({
      nats: server,
      cluster,
      coordinator: false,
      nodeAgent: { hostId: 'kill-agent', shutdownGraceMs: 1_000 },
    });
    const clients: TroupeClient[] = [];
    const client = (port: number) => {
      const c = new TroupeClient({ address: `127.0.0.1:${port}`, token, timeoutMs: 20_000 });
      clients.push(c);
      return c;
    };
    try {
      const job = await client(first.port).submitJob({
        kind: 'shell-tasks',
        concurrency: 2,
        tasks: { count: 6, command: 'sleep 0.8' },
      });
      const before: JobEvent__Output[] = [];
      for await (const e of client(first.port).watch(job.jobId)) {
        before.push(e);
        if (before.filter((x) => x.type === 'TASK_GRADED').length >= 2) break;
      }
      const gradedBefore = before.filter((e) => e.type === 'TASK_GRADED').map((e) => e.taskId);
      first.child.kill('SIGKILL');
      await new Promise((r) => first.child.once('exit', r));
      first = await coordinatorProcess(server.url, cluster, token);
      const events = await drain(
        client(first.port).watch(job.jobId, { signal: AbortSignal.timeout(90_000) }),
      );
      expect(JSON.parse(events.at(-1)!.payloadJson)).toMatchObject({ state: 'SUCCEEDED' });
      expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
      expect(events.filter((e) => e.type === 'TASK_GRADED')).toHaveLength(6);
      for (const id of gradedBefore) {
        const starts = events.filter((e) => e.type === 'TASK_STARTED' && e.taskId === id);
        expect({ id, starts: starts.length }).toEqual({ id, starts: 1 });
      }
      await waitFor(
        async () => {
          const docker = await ensureDocker();
          const left = await docker.listContainers({
            all: true,
            filters: { label: [`troupe.cluster=${cluster}`, `troupe.job=${job.jobId}`] },
          });
          return left.length === 0;
        },
        { timeoutMs: 30_000, message: 'sandboxes of the killed attempts removed' },
      );
    } finally {
      for (const c of clients) c.close();
      first.child.kill('SIGKILL');
      await nodes.stop();
    }
  },
);

(builtPackages ? test : test.skip)(
  'a 10,000-task job survives kill -9 of its coordinator: every task graded exactly once',
  async () => {
    // Trivial tasks run in the coordinator process (the fixture's noop driver): the job engine's
    // own bookkeeping, at full speed, is what the kill interrupts.
    const n = 10_000;
    const cluster = randomClusterName();
    const token = 'kill-test-token-0123456789';
    let coordinator = await coordinatorProcess(server.url, cluster, token);
    const clients: TroupeClient[] = [];
    const client = (port: number) => {
      const c = new TroupeClient({ address: `127.0.0.1:${port}`, token, timeoutMs: 30_000 });
      clients.push(c);
      return c;
    };
    try {
      const job = await client(coordinator.port).submitJob({
        kind: 'noop',
        concurrency: 256,
        retries: { max: 0 },
        tasks: n,
      });
      let gradedBefore = 0;
      for await (const e of client(coordinator.port).watch(job.jobId)) {
        if (e.type === 'TASK_GRADED' && ++gradedBefore >= n / 4) break;
      }
      coordinator.child.kill('SIGKILL');
      await new Promise((r) => coordinator.child.once('exit', r));
      coordinator = await coordinatorProcess(server.url, cluster, token);
      const events = await drain(
        client(coordinator.port).watch(job.jobId, { signal: AbortSignal.timeout(400_000) }),
      );
      const last = JSON.parse(events.at(-1)!.payloadJson) as {
        state: string;
        aggregate: { total: number; passed: number };
      };
      expect([last.state, last.aggregate.total, last.aggregate.passed]).toEqual([
        'SUCCEEDED',
        n,
        n,
      ]);
      expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
      const graded = new Map<string, number>();
      for (const e of events) {
        if (e.type === 'TASK_GRADED') graded.set(e.taskId, (graded.get(e.taskId) ?? 0) + 1);
      }
      expect(graded.size).toBe(n);
      expect([...graded.values()].filter((c) => c !== 1)).toEqual([]);
      const page = await client(coordinator.port).getResultsPage(job.jobId, { pageSize: 5_000 });
      expect(page.tasks.every((t) => t.status === 'TASK_PASSED')).toBe(true);
      expect(page.nextPageToken).not.toBe('');
    } finally {
      for (const c of clients) c.close();
      coordinator.child.kill('SIGKILL');
    }
  },
  600_000,
);
