/**
 * perf/jobs: what running a batch through Troupe's job layer costs on top of Docker itself.
 *
 * A `shell-tasks` job of N trivial tasks (`true`, default 200) on one node agent, submitted and
 * watched through the SDK over gRPC, against a plain script that runs the same N containers
 * through dockerode with the same concurrency (create → start → wait → remove, same image and
 * the sandbox policy's limits), measured in the same run (baseline, job, baseline again; the
 * baseline is their mean):
 *
 * - `job_vs_script_ratio`: job wall time (submit → JOB_FINISHED) / script wall time (target ≤ 1.2)
 * - `overhead_per_task_ms`: the scheduler's own cost per task on its slot's critical path — the
 *   wall time of a job of N tasks of a `noop` driver (no sandbox, nothing to do) × concurrency / N:
 *   dispatch post, task actor activation and turn, started/outcome posts, result record, events
 * - also printed: `(job wall − script wall) × concurrency / N`, the difference per task against
 *   the script (negative when Troupe's sandbox path is faster than the plain script's)
 *
 * - `completions_per_s`: tasks graded per second in one `noop` job of `--big N` tasks (10,000) at
 *   concurrency `--big-concurrency C` (256), submit → JOB_FINISHED: the job engine's throughput
 *   when tasks cost nothing
 * - `coordinator_rss_growth`: RSS of the process hosting the coordinator when that job ends / when
 *   its 1,000th task was graded (the engine keeps no per-task state in memory: goal ≤ 1.5)
 * - `coordinator_heap_growth` (with `--live-heap`): the same for the heap in use after a full
 *   garbage collection, the live set (RSS also holds the garbage V8 lets pile up between
 *   collections, which follows the allocation rate, not the tasks run). The collection forced at
 *   the 1,000th task resets V8's heap sizing, so that run's `coordinator_rss_growth` is lower
 *   than a run without it and not comparable. Needs `--expose-gc` (as `npm run perf` runs)
 * - `job_100k_wall_s`: that job's wall time, reported when `--big` is at least 100,000
 * - also printed for that job: the process's CPU time per task (`cpu_ms_per_task`: coordinator,
 *   node agent and gRPC client share this process) and the NATS messages per task
 *   (`nats_msgs_per_task`: messages every client connection sent or received, from the server's
 *   `/connz`), the two costs the engine's throughput hangs on
 *
 * Options: `--tasks N` (200), `--concurrency C` (4), `--samples S` (1 job run per sample),
 * `--big N` (10000; 0 skips the throughput job), `--big-concurrency C` (256), `--live-heap`.
 */
import { registerBuiltinDrivers } from '@troupe/benchmarks';
import { TroupeClient } from '@troupe/client';
import { Coordinator, DriverRegistry, type JobDriver } from '@troupe/coordinator';
import { ImageManager, NodeAgent } from '@troupe/node-agent';
import { ensureDocker, randomClusterName, startNatsServer } from '@troupe/testkit';
import type Docker from 'dockerode';
import { median, nowUs, printResult, printTable } from '../lib/report';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const TASKS = Number(arg('--tasks') ?? 200);
const CONCURRENCY = Number(arg('--concurrency') ?? 4);
const SAMPLES = Number(arg('--samples') ?? 1);
const BIG = Number(arg('--big') ?? 10_000);
const BIG_CONCURRENCY = Number(arg('--big-concurrency') ?? 256);
const LIVE_HEAP = process.argv.includes('--live-heap');

/** Runs `count` containers of `image` running `true`, `concurrency` at a time. */
async function scriptRun(docker: Docker, image: string, label: string): Promise<number> {
  let next = 0;
  const t0 = nowUs();
  const worker = async () => {
    while (next < TASKS) {
      next++;
      const c = await docker.createContainer({
        Image: image,
        Cmd: ['true'],
        User: '1000:1000',
        Labels: { 'troupe.perf': label },
        HostConfig: {
          NetworkMode: 'none',
          Memory: 256 * 1024 * 1024,
          NanoCpus: 1e9,
          PidsLimit: 256,
          ReadonlyRootfs: true,
          CapDrop: ['ALL'],
          SecurityOpt: ['no-new-privileges'],
          Tmpfs: { '/tmp': 'rw,size=64m' },
        },
      });
      await c.start();
      const r = (await c.wait()) as { StatusCode: number };
      if (r.StatusCode !== 0) throw new Error(`container exited ${r.StatusCode}`);
      await c.remove({ force: true, v: true });
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return (nowUs() - t0) / 1000;
}

/** A driver whose tasks do nothing: what remains is the scheduler's own cost. */
const noop: JobDriver = {
  name: 'noop',
  description: 'tasks that do nothing (perf)',
  validate: () => undefined,
  plan: (spec) =>
    Array.from({ length: Number(spec.tasks) }, (_, i) => ({ id: `n${i}`, input: {} })),
  runTask: async () => ({}),
  grade: async () => ({ passed: true }),
};

async function jobRun(
  client: TroupeClient,
  kind: 'shell-tasks' | 'noop',
): Promise<{ wallMs: number; passed: number }> {
  const t0 = nowUs();
  const job = await client.submitJob({
    name: 'perf-jobs',
    kind,
    concurrency: CONCURRENCY,
    retries: { max: 0 },
    tasks: kind === 'noop' ? TASKS : { count: TASKS, command: 'true' },
  });
  let finished = false;
  for await (const e of client.watch(job.jobId)) {
    if (e.type === 'JOB_FINISHED') finished = true;
  }
  const wallMs = (nowUs() - t0) / 1000;
  if (!finished) throw new Error('the job did not finish');
  const results = await client.getResults(job.jobId);
  return { wallMs, passed: results.aggregate?.passed ?? 0 };
}

/** Messages all client connections of the server have sent and received so far. */
async function natsMessages(monitorUrl: string): Promise<number> {
  const res = await fetch(`${monitorUrl}/connz?limit=1024`);
  const body = (await res.json()) as { connections?: { in_msgs: number; out_msgs: number }[] };
  return (body.connections ?? []).reduce((n, c) => n + c.in_msgs + c.out_msgs, 0);
}

/**
 * One large `noop` job: its wall time, the process's RSS when the 1,000th task was graded and
 * when the job finished, and the CPU time and NATS messages it cost.
 */
async function bigRun(
  client: TroupeClient,
  monitorUrl: string,
): Promise<{
  wallMs: number;
  rssAt1k: number;
  rssEnd: number;
  heapAt1k?: number;
  heapEnd?: number;
  cpuMs: number;
  natsMessages: number;
}> {
  const messagesBefore = await natsMessages(monitorUrl);
  const cpuBefore = process.cpuUsage();
  const t0 = nowUs();
  const job = await client.submitJob({
    name: 'perf-jobs-big',
    kind: 'noop',
    concurrency: BIG_CONCURRENCY,
    retries: { max: 0 },
    tasks: BIG,
  });
  let graded = 0;
  let rssAt1k = 0;
  let heapAt1k: number | undefined;
  let finished = false;
  let lastReport = Date.now();
  for await (const e of client.watch(job.jobId)) {
    if (e.type === 'TASK_GRADED' && ++graded === Math.min(1_000, BIG)) {
      rssAt1k = process.memoryUsage().rss;
      heapAt1k = liveHeap();
    }
    if (Date.now() - lastReport > 10_000) {
      lastReport = Date.now();
      console.log(`[perf/jobs] big job: ${graded}/${BIG} graded`);
    }
    if (e.type === 'JOB_FINISHED') finished = true;
  }
  const wallMs = (nowUs() - t0) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const messages = (await natsMessages(monitorUrl)) - messagesBefore;
  const rssEnd = process.memoryUsage().rss;
  const heapEnd = liveHeap();
  if (!finished) throw new Error('the big job did not finish');
  const results = await client.getResultsPage(job.jobId, { pageSize: 1 });
  if (results.aggregate?.passed !== BIG || graded !== BIG) {
    throw new Error(`big job: ${results.aggregate?.passed} passed, ${graded} graded of ${BIG}`);
  }
  return {
    wallMs,
    rssAt1k,
    rssEnd,
    cpuMs: (cpu.user + cpu.system) / 1000,
    natsMessages: messages,
    ...(heapAt1k !== undefined && heapEnd !== undefined ? { heapAt1k, heapEnd } : {}),
  };
}

/**
 * Heap in use after a full collection (RSS is read before it); undefined without `--live-heap`
 * or `--expose-gc`.
 */
function liveHeap(): number | undefined {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!LIVE_HEAP || !gc) return undefined;
  gc();
  return process.memoryUsage().heapUsed;
}

async function main(): Promise<void> {
  const docker = await ensureDocker();
  const { ref: image } = await new ImageManager({ docker }).ensure('busybox');
  const server = await startNatsServer();
  const cluster = randomClusterName();
  const token = 'perf-token-0123456789abcdef';
  const coordinator = await Coordinator.start(
    {
      cluster,
      nats: { servers: server.url },
      metrics: { port: null },
      shutdownGraceMs: 1_000,
      grpc: { host: '127.0.0.1', port: 0, token },
    },
    { drivers: registerBuiltinDrivers(new DriverRegistry()).register(noop) },
  );
  const agent = await NodeAgent.start({
    cluster,
    hostId: 'perf-agent',
    nats: { servers: server.url },
    shutdownGraceMs: 2_000,
    slots: { sandbox: CONCURRENCY },
  });
  const client = new TroupeClient({ address: `127.0.0.1:${coordinator.grpcPort}`, token });
  try {
    // Warm-up: image cache, actor kinds, JIT.
    await scriptRun(docker, image, cluster);
    const warm = await client.submitJob({
      kind: 'shell-tasks',
      concurrency: CONCURRENCY,
      tasks: { count: CONCURRENCY * 2, command: 'true' },
    });
    for await (const _ of client.watch(warm.jobId)) void _;
    await jobRun(client, 'noop');

    const jobs: number[] = [];
    const scripts: number[] = [];
    const noops: number[] = [];
    for (let s = 0; s < SAMPLES; s++) {
      const free = await jobRun(client, 'noop');
      if (free.passed !== TASKS) throw new Error(`only ${free.passed}/${TASKS} noop tasks passed`);
      noops.push(free.wallMs);
      const before = await scriptRun(docker, image, cluster);
      const run = await jobRun(client, 'shell-tasks');
      if (run.passed !== TASKS) throw new Error(`only ${run.passed}/${TASKS} tasks passed`);
      const after = await scriptRun(docker, image, cluster);
      jobs.push(run.wallMs);
      scripts.push((before + after) / 2);
      printTable(`sample ${s + 1}`, {
        noop_job_ms: free.wallMs,
        script_before_ms: before,
        job_ms: run.wallMs,
        script_after_ms: after,
      });
    }
    const jobMs = median(jobs);
    const scriptMs = median(scripts);
    const noopMs = median(noops);
    printTable('perf/jobs', {
      tasks: TASKS,
      concurrency: CONCURRENCY,
      job_wall_ms: jobMs,
      script_wall_ms: scriptMs,
      job_per_task_ms: jobMs / TASKS,
      script_per_task_ms: scriptMs / TASKS,
      noop_job_wall_ms: noopMs,
      difference_vs_script_per_task_ms: ((jobMs - scriptMs) * CONCURRENCY) / TASKS,
    });
    const big = BIG > 0 ? await bigRun(client, server.monitorUrl) : undefined;
    if (big) {
      printTable('perf/jobs big', {
        tasks: BIG,
        concurrency: BIG_CONCURRENCY,
        wall_s: big.wallMs / 1000,
        rss_at_1k_mb: big.rssAt1k / 2 ** 20,
        rss_end_mb: big.rssEnd / 2 ** 20,
        cpu_ms_per_task: big.cpuMs / BIG,
        nats_msgs_per_task: big.natsMessages / BIG,
        ...(big.heapAt1k !== undefined && big.heapEnd !== undefined
          ? { live_heap_at_1k_mb: big.heapAt1k / 2 ** 20, live_heap_end_mb: big.heapEnd / 2 ** 20 }
          : {}),
      });
    }
    printResult('jobs', {
      job_vs_script_ratio: jobMs / scriptMs,
      overhead_per_task_ms: (noopMs * CONCURRENCY) / TASKS,
      ...(big
        ? {
            completions_per_s: BIG / (big.wallMs / 1000),
            coordinator_rss_growth: big.rssEnd / big.rssAt1k,
            ...(big.heapAt1k !== undefined && big.heapEnd !== undefined
              ? { coordinator_heap_growth: big.heapEnd / big.heapAt1k }
              : {}),
            ...(BIG >= 100_000 ? { job_100k_wall_s: big.wallMs / 1000 } : {}),
          }
        : {}),
    });
  } finally {
    client.close();
    await agent.stop();
    await coordinator.stop();
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
