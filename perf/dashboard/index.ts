/**
 * perf/dashboard: time to first render of the dashboard's job page for a 10,000-task job, in a
 * real headless chromium (Debian's, driven by playwright-core), against the same job's results
 * fetched over gRPC by the SDK, measured in the same run.
 *
 * Everything is real: a nats-server, an in-process coordinator that runs the jobs (tasks of a
 * driver that does no work and grades a mix of passed and failed, with costs and stop reasons),
 * the SDK's gRPC calls, the dashboard server (login, results cache, server-side paging) and the
 * browser (HTML, script, first page of rows, virtualised list). Each sample starts a new dashboard
 * server, so its results cache is cold; the jobs have finished when the samples are taken, and one
 * more sample is taken while the big job runs.
 *
 * - `job_page_first_render_ms`: navigation → first task rows painted (median)
 * - `grpc_get_results_ms`: `TroupeClient.getResults` of the whole job (median)
 * - `job_page_vs_grpc_ratio`: the two above (the page reads the rows it shows, not the job)
 * - `job_page_10k_vs_100_ratio`: first render at 10,000 tasks / at 100 tasks (paging keeps it flat)
 * - also printed: the first render of the page filtered by status (which reads the whole job
 *   once), and a first render while the big job runs
 *
 * Options: `--tasks N` (10000), `--samples S` (5), `--chromium PATH` (/usr/bin/chromium).
 */
import { registerBuiltinDrivers } from '@troupe/benchmarks';
import { DashboardServer, TroupeClient } from '@troupe/client';
import { Coordinator, DriverRegistry, type JobDriver } from '@troupe/coordinator';
import { randomClusterName, startNatsServer } from '@troupe/testkit';
import { chromium, type Page } from 'playwright-core';
import { median, nowUs, printResult, printTable } from '../lib/report';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const TASKS = Number(arg('--tasks') ?? 10_000);
const SAMPLES = Number(arg('--samples') ?? 5);
const CHROMIUM = arg('--chromium') ?? '/usr/bin/chromium';

/** Tasks that do no work and grade a mix: 3 in 5 pass, with a score, a cost and a stop reason. */
const mixed: JobDriver = {
  name: 'perf-dashboard',
  description: 'tasks that do nothing and grade a mix of outcomes (perf)',
  validate: () => undefined,
  plan: (spec) =>
    Array.from({ length: Number(spec.tasks) }, (_, i) => ({
      id: `task-${String(i).padStart(6, '0')}`,
      input: { i },
    })),
  runTask: async () => ({}),
  grade: async (_ctx, input) => {
    const i = (input as { i: number }).i;
    return {
      passed: i % 5 < 3,
      score: (i % 100) / 100,
      stopReason: i % 7 === 0 ? 'max_steps' : 'finished',
      costUsd: 0.01,
      promptTokens: 12_000 + i,
      details: { steps: 12, patchBytes: 420 },
    };
  },
};

async function runJob(
  client: TroupeClient,
  tasks: number,
  onRunning?: (jobId: string) => Promise<void>,
): Promise<string> {
  const job = await client.submitJob({
    name: `perf-dashboard-${tasks}`,
    kind: 'perf-dashboard',
    concurrency: 256,
    retries: { max: 0 },
    tasks,
  });
  let graded = 0;
  let sampled = false;
  let sample: Promise<void> | undefined;
  for await (const e of client.watch(job.jobId)) {
    if (e.type === 'TASK_GRADED') graded++;
    if (onRunning && !sampled && graded >= tasks / 2) {
      sampled = true;
      sample = onRunning(job.jobId);
    }
    if (e.type === 'JOB_FINISHED') break;
  }
  await sample;
  const done = await client.getResultsPage(job.jobId, { pageSize: 1 });
  if (done.aggregate?.total !== tasks || done.aggregate.pending !== 0) {
    throw new Error(`job of ${tasks} tasks ended with ${JSON.stringify(done.aggregate)}`);
  }
  return job.jobId;
}

async function main(): Promise<void> {
  const server = await startNatsServer();
  const token = 'perf-dashboard-token-0123456789';
  const coordinator = await Coordinator.start(
    {
      cluster: randomClusterName(),
      nats: { servers: server.url },
      metrics: { port: null },
      shutdownGraceMs: 1_000,
      grpc: { host: '127.0.0.1', port: 0, token },
    },
    { drivers: registerBuiltinDrivers(new DriverRegistry()).register(mixed) },
  );
  const client = new TroupeClient({
    address: `127.0.0.1:${coordinator.grpcPort}`,
    token,
    timeoutMs: 120_000,
  });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
  const page = await context.newPage();

  /** A new dashboard server (a cold results cache), logged in; then its job page, timed. */
  const render = async (jobId: string, status?: string): Promise<number> => {
    const dashboard = await DashboardServer.start({ api: client, token });
    try {
      await login(page, dashboard.url, token);
      await page.goto('about:blank');
      const t0 = nowUs();
      await page.goto(`${dashboard.url}#/job/${jobId}`);
      await page.waitForSelector('.vrow[data-task]', { timeout: 120_000 });
      if (status === undefined) return (nowUs() - t0) / 1000;
      // Filtering reads the whole job once: from choosing the status to its rows drawn.
      const t1 = nowUs();
      await page.selectOption('#task-status', status);
      await page.waitForFunction(
        (s) => {
          // (This file is not compiled against the DOM's types.)
          const doc = (globalThis as unknown as { document: Document }).document;
          const rows = Array.from(doc.querySelectorAll('.vrow[data-task] span:nth-child(3)'));
          return rows.length > 0 && rows.every((r) => r.className === `s-${s}`);
        },
        status,
        { timeout: 120_000 },
      );
      return (nowUs() - t1) / 1000;
    } finally {
      await dashboard.stop();
    }
  };
  const grpc = async (jobId: string, tasks: number): Promise<number> => {
    const t0 = nowUs();
    const r = await client.getResults(jobId, { pageSize: 5_000 });
    if (r.tasks.length !== tasks) throw new Error(`got ${r.tasks.length} tasks`);
    return (nowUs() - t0) / 1000;
  };
  try {
    process.stderr.write(`[perf dashboard] running a job of ${TASKS} tasks\n`);
    let whileRunning = NaN;
    const big = await runJob(client, TASKS, async (jobId) => {
      whileRunning = await render(jobId);
    });
    const small = await runJob(client, 100);
    // Warm-up: JIT, browser process, protobuf loader.
    await render(small);
    await grpc(small, 100);
    const pageBig: number[] = [];
    const pageSmall: number[] = [];
    const fetchBig: number[] = [];
    const filterBig: number[] = [];
    for (let s = 0; s < SAMPLES; s++) {
      process.stderr.write(`[perf dashboard] sample ${s + 1}/${SAMPLES}\n`);
      fetchBig.push(await grpc(big, TASKS));
      pageBig.push(await render(big));
      pageSmall.push(await render(small));
      filterBig.push(await render(big, 'TASK_FAILED'));
    }
    const firstRender = median(pageBig);
    const grpcMs = median(fetchBig);
    printTable(`dashboard job page, ${TASKS} tasks, ${SAMPLES} samples (ms)`, {
      'first render (median)': firstRender,
      'first render, 100 tasks (median)': median(pageSmall),
      'first render while the job ran (one sample)': whileRunning,
      'status filter drawn, cold cache (median)': median(filterBig),
      'gRPC GetResults, whole job (median)': grpcMs,
      'first render samples': pageBig.map((x) => Math.round(x)).join(' '),
      'gRPC samples': fetchBig.map((x) => Math.round(x)).join(' '),
    });
    printResult('dashboard', {
      job_page_first_render_ms: firstRender,
      grpc_get_results_ms: grpcMs,
      job_page_vs_grpc_ratio: firstRender / grpcMs,
      job_page_10k_vs_100_ratio: firstRender / median(pageSmall),
      job_page_running_ms: whileRunning,
      job_page_filter_ms: median(filterBig),
      tasks: TASKS,
    });
  } finally {
    await browser.close();
    client.close();
    await coordinator.stop();
    await server.stop();
  }
}

/** What the status check above reads of the page. */
interface Document {
  querySelectorAll(selector: string): ArrayLike<{ className: string }>;
}

async function login(page: Page, url: string, token: string): Promise<void> {
  await page.goto(`${url}login`);
  await page.fill('#token', token);
  await page.click('#login-submit');
  await page.waitForURL((u) => !u.pathname.startsWith('/login'));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
