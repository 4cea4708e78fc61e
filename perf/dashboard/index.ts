/**
 * perf/dashboard: time to first render of the dashboard's job page for a 10,000-task job, in a
 * real headless chromium (Debian's, driven by playwright-core), against the same job's results
 * fetched over gRPC by the SDK, measured in the same run.
 *
 * A job plans at most 2,000 tasks (MAX_TASKS_PER_JOB), so no real cluster can hold a
 * 10,000-task job: the job API here is a gRPC server speaking the real `troupe.v1.JobService`
 * contract (`loadJobApi`) with generated results. Everything the figure covers is real: the
 * SDK's gRPC call, the dashboard server (login, results cache, server-side paging) and the
 * browser (HTML, script, first page of rows, virtualised list). Each sample uses a new job id,
 * so the dashboard's results cache is cold.
 *
 * - `job_page_first_render_ms`: navigation → first task rows painted (median)
 * - `grpc_get_results_ms`: `TroupeClient.getResults` of the same job (median)
 * - `job_page_vs_grpc_ratio`: the two above (what the page costs over the bare data fetch)
 * - `job_page_10k_vs_100_ratio`: first render at 10,000 tasks / at 100 tasks (paging keeps it flat)
 *
 * Options: `--tasks N` (10000), `--samples S` (5), `--chromium PATH` (/usr/bin/chromium).
 */
import { randomBytes } from 'node:crypto';
import {
  type handleUnaryCall,
  Server,
  ServerCredentials,
  type ServerWritableStream,
  status,
} from '@grpc/grpc-js';
import { DashboardServer, TroupeClient } from '@troupe/client';
import { loadJobApi } from '@troupe/proto';
import { chromium } from 'playwright-core';
import { median, nowUs, printResult, printTable } from '../lib/report';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const TASKS = Number(arg('--tasks') ?? 10_000);
const SAMPLES = Number(arg('--samples') ?? 5);
const CHROMIUM = arg('--chromium') ?? '/usr/bin/chromium';
const STATUSES = ['TASK_PASSED', 'TASK_PASSED', 'TASK_FAILED', 'TASK_TIMED_OUT', 'TASK_ERRORED'];

function sizeOf(jobId: string): number {
  return Number(/-n(\d+)-/.exec(jobId)?.[1] ?? TASKS);
}

function job(jobId: string): Record<string, unknown> {
  const n = sizeOf(jobId);
  return {
    jobId,
    name: 'perf-dashboard',
    kind: 'issue-resolution',
    state: 'RUNNING',
    reason: '',
    labels: {},
    createdUnixMs: Date.now() - 60_000,
    startedUnixMs: Date.now() - 59_000,
    progress: {
      total: n,
      done: n - 10,
      passed: Math.floor(n * 0.4),
      failed: n - 10 - Math.floor(n * 0.4),
      running: 10,
      costUsd: n * 0.01,
    },
    specJson: '{}',
  };
}

function results(jobId: string): Record<string, unknown> {
  const n = sizeOf(jobId);
  return {
    jobId,
    state: 'RUNNING',
    aggregate: { total: n, passed: Math.floor(n * 0.4), costUsd: n * 0.01 },
    tasks: Array.from({ length: n }, (_, i) => ({
      taskId: `task-${String(i).padStart(6, '0')}`,
      status: i >= n - 10 ? 'TASK_RUNNING' : STATUSES[i % STATUSES.length],
      score: (i % 100) / 100,
      attempts: 1 + (i % 3 === 0 ? 1 : 0),
      costUsd: 0.01,
      tokens: 12_000 + i,
      durationMs: 30_000 + (i % 1000) * 17,
      stopReason: i % 7 === 0 ? 'max_steps' : 'finished',
      error: i % 5 === 4 ? 'sandbox exited 137 (out of memory)' : '',
      artifacts: [`jobs/${jobId}/tasks/task-${i}/trajectory.jsonl`],
      detailsJson: JSON.stringify({ steps: 12, patchBytes: 420 }),
    })),
  };
}

async function startJobApi(token: string): Promise<{ server: Server; address: string }> {
  const api = loadJobApi();
  const server = new Server({ 'grpc.max_send_message_length': 256 * 1024 * 1024 });
  const authorised = (md: { get(k: string): unknown[] }) =>
    md.get('authorization')[0] === `Bearer ${token}`;
  const unary =
    (fn: (jobId: string) => unknown): handleUnaryCall<{ jobId: string }, unknown> =>
    (call, cb) => {
      if (!authorised(call.metadata)) {
        cb({ code: status.UNAUTHENTICATED, details: 'bad token' });
        return;
      }
      cb(null, fn(call.request.jobId));
    };
  server.addService(api.JobService.service, {
    GetJob: unary(job),
    GetResults: unary(results),
    WatchJob: (call: ServerWritableStream<{ jobId: string }, unknown>) => {
      // A running job: one event, then the stream stays open until the page goes away.
      call.write({
        sequence: 1,
        jobId: call.request.jobId,
        type: 'JOB_STARTED',
        timeUnixMs: Date.now(),
        taskId: '',
        payloadJson: '{}',
        message: '',
      });
      call.on('cancelled', () => call.end());
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return { server, address: `127.0.0.1:${port}` };
}

async function main(): Promise<void> {
  const token = randomBytes(16).toString('hex');
  const { server, address } = await startJobApi(token);
  const client = new TroupeClient({ address, token, timeoutMs: 60_000 });
  const dashboard = await DashboardServer.start({ api: client, token });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${dashboard.url}login`);
    await page.fill('#token', token);
    await page.click('#login-submit');
    await page.waitForURL((u) => !u.pathname.startsWith('/login'));

    const render = async (jobId: string): Promise<number> => {
      await page.goto('about:blank');
      const t0 = nowUs();
      await page.goto(`${dashboard.url}#/job/${jobId}`);
      await page.waitForSelector('.vrow[data-task]', { timeout: 120_000 });
      return (nowUs() - t0) / 1000;
    };
    const grpc = async (jobId: string): Promise<number> => {
      const t0 = nowUs();
      const r = await client.getResults(jobId);
      if (r.tasks.length !== sizeOf(jobId)) throw new Error(`got ${r.tasks.length} tasks`);
      return (nowUs() - t0) / 1000;
    };
    // Warm-up: JIT, browser process, protobuf loader.
    await render(`warm-n${TASKS}-0`);
    await grpc(`warm-n${TASKS}-1`);
    const page10k: number[] = [];
    const page100: number[] = [];
    const fetch10k: number[] = [];
    for (let s = 0; s < SAMPLES; s++) {
      process.stderr.write(`[perf dashboard] sample ${s + 1}/${SAMPLES}\n`);
      fetch10k.push(await grpc(`g-n${TASKS}-${s}`));
      page10k.push(await render(`p-n${TASKS}-${s}`));
      page100.push(await render(`p-n100-${s}`));
    }
    const firstRender = median(page10k);
    const grpcMs = median(fetch10k);
    printTable(`dashboard job page, ${TASKS} tasks, ${SAMPLES} samples (ms)`, {
      'first render (median)': firstRender,
      'first render, 100 tasks (median)': median(page100),
      'gRPC GetResults (median)': grpcMs,
      'first render samples': page10k.map((x) => Math.round(x)).join(' '),
      'gRPC samples': fetch10k.map((x) => Math.round(x)).join(' '),
    });
    printResult('dashboard', {
      job_page_first_render_ms: firstRender,
      grpc_get_results_ms: grpcMs,
      job_page_vs_grpc_ratio: firstRender / grpcMs,
      job_page_10k_vs_100_ratio: firstRender / median(page100),
      tasks: TASKS,
    });
  } finally {
    await browser.close();
    await dashboard.stop();
    client.close();
    server.forceShutdown();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
