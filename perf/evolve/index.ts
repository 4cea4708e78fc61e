/**
 * perf/evolve: evaluation throughput of an `evolve` search under Troupe against a plain loop
 * that runs the same evaluator containers through dockerode, measured in the same run.
 *
 * Both sides run N evaluations of the same synthetic suite (a python evaluator that runs the
 * candidate, recomputes its score from the raw output and pads its own time to `evalMs`) in
 * `troupe-python-slim` containers with the sandbox policy (no network, read-only root, a volume
 * for /workspace, one CPU, the suite's memory), one reused container per slot:
 *
 * - **Troupe**: an `evolve` job submitted to an in-process coordinator with one node agent (the
 *   embedded cluster of `troupe run`): the driver's search runner, island steps, journal appends
 *   in JetStream, the sandbox evaluator pool, asks to sandbox actors over NATS, Docker execs.
 *   The window is the first attempt's start to the last node's end (journal timings).
 * - **plain loop**: S workers, each with one container (created in the window), each evaluation
 *   `exec` clean → `putArchive` program + grader → `exec` the evaluator command.
 *
 * Metrics (JSON last line):
 * - `scaling_efficiency`: Troupe throughput with 2 slots / (2 × with 1 slot), long evaluations
 *   (target ≥ 0.8); `scaling_efficiency_short_4` the same with 4 slots and short evaluations
 * - `overhead_fraction`: the worst, over the configurations, of Troupe's slot time per evaluation
 *   minus the plain loop's, divided by the plain loop's (its evaluation time) (target ≤ 0.05)
 * - `evals_per_hour`: Troupe's throughput with 2 slots (the default `evaluatorSlots`) and long
 *   evaluations
 * - `plain_scaling_efficiency(_short_4)`: the plain loop's own scaling, what the machine allows
 *   (on a loaded 2-core VM it is well below 1: Docker execs and python start-up need CPU)
 *
 * - `async_slot_utilisation`: slot utilisation of the async (steady-state) schedule with
 *   evaluation times varying 10x (`--async-eval-ms` / 10 … `--async-eval-ms`, 1000;
 *   `--async-evals`, 32; 2 slots), goal ≥ 0.9; `generational_slot_utilisation` the same search
 *   with the generational schedule in the same run (`--only async` runs just these)
 *
 * - `multi_node_scaling`: one search across two node-agent processes (2 sandbox slots each, 4
 *   evaluator slots) against the same search on one of them (2 slots), async schedule,
 *   evaluations that wait (`--multi-eval-ms`, 3000) rather than compute, so that the two cores do
 *   not bound the figure: throughput with 2 nodes / (2 × with 1), goal ≥ 0.85 (`--only
 *   multi-node` runs just this; `--multi-evals`, 16 per node)
 *
 * Options: `--eval-ms D` (1000) and `--evals N` (24) for the long runs, `--short-eval-ms` (200)
 * and `--short-evals` (40) for the short ones, `--samples S` (1: each configuration runs
 * baseline, Troupe, baseline again; the baseline is their mean).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { connect } from '@nats-io/transport-node';
import { JetStreamJournalStore, type JournalRecord } from '@troupe/evolve';
import { createEvolveDriver, evolveJournalTaskId } from '@troupe/benchmarks';
import { Coordinator, DriverRegistry } from '@troupe/coordinator';
import { ImageManager, NodeAgent } from '@troupe/node-agent';
import { ensureDocker, randomClusterName, startNatsServer, waitFor } from '@troupe/testkit';
import type Docker from 'dockerode';
import { pack } from 'tar-stream';
import { median, nowUs, printResult, printTable } from '../lib/report';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const LONG_EVAL_MS = Number(arg('--eval-ms') ?? 1000);
const LONG_EVALS = Number(arg('--evals') ?? 24);
const SHORT_EVAL_MS = Number(arg('--short-eval-ms') ?? 200);
const SHORT_EVALS = Number(arg('--short-evals') ?? 40);
const SAMPLES = Number(arg('--samples') ?? 1);
const ASYNC_EVAL_MS = Number(arg('--async-eval-ms') ?? 1000);
const ASYNC_EVALS = Number(arg('--async-evals') ?? 32);
const MULTI_EVAL_MS = Number(arg('--multi-eval-ms') ?? 3000);
const MULTI_EVALS = Number(arg('--multi-evals') ?? 16);
const IMAGE = 'troupe-python-slim:latest';
const EVAL_DIR = '/workspace/eval';
const CLEAN_SCRIPT = `rm -rf ${EVAL_DIR} /tmp/* /tmp/.[!.]* 2>/dev/null; mkdir -p ${EVAL_DIR}`;

const PROGRAM = `X = 0.5  # troupe:param float[0,1]
Y = 0.5  # troupe:param float[0,1]
print(X, Y)
`;

// The evaluator: runs the program in its own process, reads its raw output, recomputes the score
// and pads its own time to --eval-ms (a stand-in for real work of a known length).
const EVALUATOR = `import argparse, json, math, subprocess, sys, time
t0 = time.monotonic()
p = argparse.ArgumentParser()
p.add_argument('--program'); p.add_argument('--phase'); p.add_argument('--timeout-s', type=float)
p.add_argument('--eval-ms', type=float)
p.add_argument('--vary', action='store_true')
a = p.parse_args()
out = {"status": "ok", "score": None, "signature": [], "metrics": {}, "stderrTail": "",
       "evalMs": 0, "evaluatorVersion": "perf-evolve/1"}
try:
    r = subprocess.run([sys.executable, a.program], capture_output=True, text=True, timeout=a.timeout_s)
    out["stderrTail"] = r.stderr[-500:]
    if r.returncode != 0:
        out["status"] = "error"
    else:
        x, y = (float(v) for v in r.stdout.split()[:2])
        if not (math.isfinite(x) and math.isfinite(y)):
            out["status"] = "invalid"
        else:
            out["score"] = -((x - 0.3) ** 2 + (y - 0.7) ** 2)
            out["signature"] = [x, y]
            if a.vary:
                # Evaluation time varies 10x with the program: eval-ms / 10 at X = 0 to eval-ms at 1.
                a.eval_ms = a.eval_ms * (0.1 + 0.9 * min(1.0, max(0.0, x)))
except subprocess.TimeoutExpired:
    out["status"] = "timeout"
except Exception as e:
    out["status"] = "invalid"; out["metrics"] = {"reason": str(e)[:200]}
rest = a.eval_ms / 1000 - (time.monotonic() - t0)
if rest > 0:
    time.sleep(rest)
out["evalMs"] = round((time.monotonic() - t0) * 1000)
print(json.dumps(out))
`;

function taskYaml(evalMs: number, vary = false): string {
  return `name: perf-evolve
description: perf suite (synthetic evaluator of a fixed length)
language: python
seeds: [seed/program.py]
direction: maximise
evaluator:
  image: python-slim
  command: [python3, '{suite}/grader/evaluate.py', --program, '{program}', --phase, '{phase}', --timeout-s, '{timeoutS}', --eval-ms, '${evalMs}'${vary ? ', --vary' : ''}]
  timeoutMs: 30000
  memoryMb: 256
phases:
  validation: { files: [grader/] }
  test: { files: [grader/] }
`;
}

/** Writes the suite for evaluations of `evalMs` into a temp dir; returns its path. */
function writeSuite(root: string, evalMs: number, vary = false): string {
  const dir = path.join(root, `suite-${evalMs}${vary ? '-vary' : ''}`);
  mkdirSync(path.join(dir, 'seed'), { recursive: true });
  mkdirSync(path.join(dir, 'grader'), { recursive: true });
  writeFileSync(path.join(dir, 'task.yaml'), taskYaml(evalMs, vary));
  writeFileSync(path.join(dir, 'seed', 'program.py'), PROGRAM);
  writeFileSync(path.join(dir, 'grader', 'evaluate.py'), EVALUATOR);
  return dir;
}

function evaluatorCmd(evalMs: number): string[] {
  return [
    'python3',
    `${EVAL_DIR}/suite/grader/evaluate.py`,
    '--program',
    `${EVAL_DIR}/program.py`,
    '--phase',
    'validation',
    '--timeout-s',
    '27',
    '--eval-ms',
    String(evalMs),
  ];
}

async function execIn(
  docker: Docker,
  container: Docker.Container,
  cmd: string[],
): Promise<{ exitCode: number; stdout: string }> {
  const exec = await container.exec({
    Cmd: cmd,
    User: '1000:1000',
    WorkingDir: '/workspace',
    AttachStdout: true,
    AttachStderr: true,
  });
  const stream = await exec.start({ hijack: true, stdin: false });
  const out = new PassThrough();
  const err = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  err.resume();
  await new Promise<void>((resolve) => {
    docker.modem.demuxStream(stream, out, err);
    stream.once('end', () => resolve());
    stream.once('close', () => resolve());
  });
  const info = await exec.inspect();
  return { exitCode: info.ExitCode ?? -1, stdout: Buffer.concat(chunks).toString('utf8') };
}

function evalTar(): ReturnType<typeof pack> {
  const p = pack();
  const dir = (name: string) =>
    p.entry({ name, type: 'directory', mode: 0o755, uid: 1000, gid: 1000 });
  const entry = (name: string, body: string) =>
    p.entry({ name, mode: 0o644, uid: 1000, gid: 1000 }, body);
  for (const d of ['eval', 'eval/suite', 'eval/suite/grader']) dir(d);
  entry('eval/program.py', PROGRAM);
  entry('eval/suite/grader/evaluate.py', EVALUATOR);
  p.finalize();
  return p;
}

/** The plain loop: `slots` containers, `evals` evaluations in all; returns the window in ms. */
async function plainLoop(
  docker: Docker,
  label: string,
  slots: number,
  evals: number,
  evalMs: number,
): Promise<{ windowMs: number; busyMs: number; evaluatorMs: number }> {
  let next = 0;
  let busyUs = 0;
  let evaluatorMs = 0;
  const t0 = nowUs();
  const worker = async (w: number): Promise<void> => {
    const name = `perf-evolve-${label}-${w}-${Date.now()}`;
    await docker.createVolume({ Name: `${name}-ws`, Labels: { 'troupe.perf': label } });
    const c = await docker.createContainer({
      name,
      Image: IMAGE,
      Entrypoint: ['/bin/sh', '-c', 'while :; do sleep 3600; done'],
      Cmd: [],
      User: '1000:1000',
      WorkingDir: '/workspace',
      Labels: { 'troupe.perf': label },
      NetworkDisabled: true,
      HostConfig: {
        Init: true,
        NetworkMode: 'none',
        ReadonlyRootfs: true,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        Memory: 256 * 1024 * 1024,
        MemorySwap: 256 * 1024 * 1024,
        NanoCpus: 1e9,
        PidsLimit: 256,
        Tmpfs: { '/tmp': 'rw,nosuid,nodev,size=64m,mode=1777' },
        Mounts: [{ Type: 'volume', Source: `${name}-ws`, Target: '/workspace' }],
      },
    });
    try {
      await c.start();
      while (next < evals) {
        next++;
        const e0 = nowUs();
        const clean = await execIn(docker, c, ['/bin/sh', '-c', CLEAN_SCRIPT]);
        if (clean.exitCode !== 0) throw new Error(`clean exited ${clean.exitCode}`);
        await c.putArchive(evalTar() as unknown as NodeJS.ReadableStream, { path: '/workspace' });
        const r = await execIn(docker, c, evaluatorCmd(evalMs));
        const line = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as {
          status?: string;
          evalMs?: number;
        };
        evaluatorMs += line.evalMs ?? 0;
        if (r.exitCode !== 0 || line.status !== 'ok') {
          throw new Error(`evaluator failed: exit ${r.exitCode}, ${r.stdout.slice(-200)}`);
        }
        busyUs += nowUs() - e0;
      }
    } finally {
      await c.remove({ force: true, v: true });
      await docker
        .getVolume(`${name}-ws`)
        .remove()
        .catch(() => undefined);
    }
  };
  await Promise.all(Array.from({ length: slots }, (_, w) => worker(w)));
  return { windowMs: (nowUs() - t0) / 1000, busyMs: busyUs / 1000, evaluatorMs };
}

interface TroupeRun {
  windowMs: number;
  /** Sum over evaluations of the time a slot was held (the pool's clean, put, exec asks). */
  busyMs: number;
  /** Sum of the evaluator's own `evalMs` (measured inside the container). */
  evaluatorMs: number;
  jobWallMs: number;
  evaluations: number;
  queueMsPerEval: number;
}

function windowOf(records: readonly JournalRecord[]): {
  windowMs: number;
  evaluations: number;
  queueMs: number;
  busyMs: number;
  evaluatorMs: number;
} {
  let busyMs = 0;
  let evaluatorMs = 0;
  let first = Infinity;
  let last = -Infinity;
  let evaluations = 0;
  let queueMs = 0;
  for (const r of records) {
    if (r.type !== 'node' || r.result === null) continue;
    evaluations++;
    queueMs += r.timings.queueMs;
    busyMs += r.timings.totalMs - r.timings.opMs - r.timings.queueMs;
    evaluatorMs += r.result.evalMs;
    first = Math.min(first, r.timings.startedAt);
    last = Math.max(last, r.timings.startedAt + r.timings.totalMs);
  }
  return { windowMs: last - first, evaluations, queueMs, busyMs, evaluatorMs };
}

/**
 * `multi_node_scaling`: the same search on one node-agent process (2 sandbox slots, 2 evaluator
 * slots, MULTI_EVALS evaluations), then on two (4 and 2 × MULTI_EVALS); evaluations wait rather
 * than compute. Throughput with two / (2 × with one).
 */
async function multiNodeScaling(
  cluster: string,
  natsUrl: string,
  coordinator: Coordinator,
  troupeRun: (
    slots: number,
    evals: number,
    evalMs: number,
    schedule?: { mode: 'generational' | 'async'; vary: boolean },
  ) => Promise<TroupeRun>,
): Promise<number> {
  const agents: ChildProcess[] = [];
  const spawnAgent = async (hostId: string): Promise<void> => {
    // The built node agent (perf/dist/evolve → node-agent/dist/main.js), its output passed on.
    const main = path.resolve(__dirname, '../../../node-agent/dist/main.js');
    const child = spawn(process.execPath, [main], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: {
        ...process.env,
        TROUPE_CLUSTER: cluster,
        TROUPE_NATS_URL: natsUrl,
        TROUPE_HOST_ID: hostId,
        TROUPE_SLOTS: 'sandbox=2',
        TROUPE_LOG_LEVEL: 'warn',
        TROUPE_VM: 'off',
      },
    });
    agents.push(child);
    await waitFor(
      () => coordinator.registry?.schedulable().some((h) => h.info.hostId === hostId) ?? false,
      { timeoutMs: 60_000, message: `node agent ${hostId} registered` },
    );
  };
  try {
    const schedule = { mode: 'async' as const, vary: false };
    await spawnAgent('perf-node-a');
    await troupeRun(2, 4, MULTI_EVAL_MS / 10, schedule); // warm-up of the process
    const one = await troupeRun(2, MULTI_EVALS, MULTI_EVAL_MS, schedule);
    await spawnAgent('perf-node-b');
    const two = await troupeRun(4, 2 * MULTI_EVALS, MULTI_EVAL_MS, schedule);
    const rateOne = one.evaluations / one.windowMs;
    const rateTwo = two.evaluations / two.windowMs;
    const scaling = rateTwo / (2 * rateOne);
    printTable('multi_node', {
      evaluator_ms: MULTI_EVAL_MS,
      one_node_evaluations: one.evaluations,
      one_node_window_ms: one.windowMs,
      two_nodes_evaluations: two.evaluations,
      two_nodes_window_ms: two.windowMs,
      multi_node_scaling: scaling,
    });
    return scaling;
  } finally {
    // SIGTERM: each node agent removes its sandboxes before it exits.
    await Promise.all(
      agents.map(async (a) => {
        if (a.exitCode !== null || a.signalCode !== null) return;
        const exited = new Promise((r) => a.once('exit', r));
        a.kill('SIGTERM');
        await exited;
      }),
    );
  }
}

async function main(): Promise<void> {
  const docker = await ensureDocker();
  await new ImageManager({ docker }).ensure('python-slim');
  const root = mkdtempSync(path.join(tmpdir(), 'perf-evolve-'));
  const server = await startNatsServer();
  const nc = await connect(server.connectOptions);
  const cluster = randomClusterName();
  const journal = new JetStreamJournalStore({ connection: nc, cluster });
  const coordinator = await Coordinator.start(
    { cluster, nats: { servers: server.url }, metrics: { port: null }, shutdownGraceMs: 1_000 },
    { drivers: new DriverRegistry().register(createEvolveDriver({ journal })) },
  );
  const agent = await NodeAgent.start({
    cluster,
    hostId: 'perf-agent',
    nats: { servers: server.url },
    shutdownGraceMs: 2_000,
    slots: { sandbox: 8 },
  });
  const jobs = coordinator.jobs;
  if (!jobs) throw new Error('the coordinator has no job runtime');

  const troupeRun = async (
    slots: number,
    evals: number,
    evalMs: number,
    schedule?: { mode: 'generational' | 'async'; vary: boolean },
  ): Promise<TroupeRun> => {
    const suite = writeSuite(root, evalMs, schedule?.vary ?? false);
    const t0 = nowUs();
    const record = await jobs.submit({
      spec: {
        kind: 'evolve',
        concurrency: 1,
        taskTimeoutMs: 1_800_000,
        retries: { max: 0 },
        config: { evaluatorSlots: slots, saveJournal: false },
        tasks: [
          {
            id: 'perf',
            suite,
            limits: { maxEvaluations: evals, maxGenerations: 1000, maxWallMs: 3_600_000 },
            search: {
              islands: 2,
              includeSeeds: false,
              draftsPerIsland: Math.max(1, Math.ceil(slots / 2)),
              childrenPerGeneration: Math.max(4, slots * 2),
              islandConcurrency: slots,
              testPhase: false,
              evaluationTimeoutMs: 30_000,
              ...(schedule ? { schedule: schedule.mode } : {}),
            },
          },
        ],
      },
    });
    for await (const e of await jobs.watch(record.jobId, {
      signal: AbortSignal.timeout(1_800_000),
    })) {
      void e;
    }
    const jobWallMs = (nowUs() - t0) / 1000;
    const results = await jobs.results(record.jobId);
    const task = results.tasks[0];
    if (task?.status !== 'TASK_PASSED') {
      throw new Error(`the perf search did not pass: ${JSON.stringify(task)}`);
    }
    const { records } = await journal.read(evolveJournalTaskId(record.jobId, 'perf'));
    const w = windowOf(records);
    if (w.evaluations !== evals) {
      throw new Error(`expected ${evals} evaluations, the journal has ${w.evaluations}`);
    }
    return {
      windowMs: w.windowMs,
      busyMs: w.busyMs,
      evaluatorMs: w.evaluatorMs,
      jobWallMs,
      evaluations: w.evaluations,
      queueMsPerEval: w.queueMs / w.evaluations,
    };
  };

  try {
    // Warm-up: image layers, actor kinds, python caches, JIT.
    await plainLoop(docker, cluster, 2, 4, SHORT_EVAL_MS);
    await troupeRun(2, 4, SHORT_EVAL_MS);

    const only = arg('--only')?.split(',');
    const allConfigs = [
      { name: 'long_1', slots: 1, evals: LONG_EVALS, evalMs: LONG_EVAL_MS },
      { name: 'long_2', slots: 2, evals: LONG_EVALS, evalMs: LONG_EVAL_MS },
      { name: 'short_1', slots: 1, evals: SHORT_EVALS, evalMs: SHORT_EVAL_MS },
      { name: 'short_2', slots: 2, evals: SHORT_EVALS, evalMs: SHORT_EVAL_MS },
      { name: 'short_4', slots: 4, evals: SHORT_EVALS, evalMs: SHORT_EVAL_MS },
    ];
    const configs = allConfigs.filter((c) => !only || only.includes(c.name));
    const rate: Record<string, { troupe: number; plain: number; overhead: number }> = {};
    for (const c of configs) {
      const troupe: number[] = [];
      const plain: number[] = [];
      const walls: number[] = [];
      const troupeBusy: number[] = [];
      const plainBusy: number[] = [];
      for (let s = 0; s < SAMPLES; s++) {
        const before = await plainLoop(docker, cluster, c.slots, c.evals, c.evalMs);
        const run = await troupeRun(c.slots, c.evals, c.evalMs);
        const after = await plainLoop(docker, cluster, c.slots, c.evals, c.evalMs);
        troupe.push(run.windowMs);
        plain.push((before.windowMs + after.windowMs) / 2);
        walls.push(run.jobWallMs);
        troupeBusy.push(run.busyMs / c.evals);
        plainBusy.push((before.busyMs + after.busyMs) / 2 / c.evals);
        printTable(`${c.name} sample ${s + 1}`, {
          slots: c.slots,
          evaluations: c.evals,
          evaluator_ms: c.evalMs,
          plain_before_ms: before.windowMs,
          troupe_window_ms: run.windowMs,
          plain_after_ms: after.windowMs,
          troupe_job_wall_ms: run.jobWallMs,
          troupe_queue_ms_per_eval: run.queueMsPerEval,
          // Where Troupe's time goes: a slot held for one evaluation (asks + Docker), and the
          // fraction of the window the slots were held at all (the rest: search work between
          // evaluations, generation barriers).
          troupe_held_ms_per_eval: run.busyMs / c.evals,
          plain_held_ms_per_eval: (before.busyMs + after.busyMs) / 2 / c.evals,
          // The evaluator's own time inside the container (same script on both sides).
          troupe_evaluator_ms_per_eval: run.evaluatorMs / c.evals,
          plain_evaluator_ms_per_eval: (before.evaluatorMs + after.evaluatorMs) / 2 / c.evals,
          troupe_slot_utilisation: run.busyMs / (run.windowMs * c.slots),
          plain_slot_utilisation:
            (before.busyMs + after.busyMs) / (before.windowMs + after.windowMs) / c.slots,
        });
      }
      const troupeMs = median(troupe);
      const plainMs = median(plain);
      // Slot time per evaluation: what one evaluation occupies a slot for.
      const troupePerEval = (troupeMs * c.slots) / c.evals;
      const plainPerEval = (plainMs * c.slots) / c.evals;
      rate[c.name] = {
        troupe: c.evals / (troupeMs / 1000),
        plain: c.evals / (plainMs / 1000),
        overhead: (troupePerEval - plainPerEval) / plainPerEval,
      };
      printTable(c.name, {
        troupe_evals_per_s: c.evals / (troupeMs / 1000),
        plain_evals_per_s: c.evals / (plainMs / 1000),
        troupe_slot_ms_per_eval: troupePerEval,
        plain_slot_ms_per_eval: plainPerEval,
        overhead_ms_per_eval: troupePerEval - plainPerEval,
        overhead_fraction: (troupePerEval - plainPerEval) / plainPerEval,
        troupe_job_wall_ms: median(walls),
        troupe_held_ms_per_eval: median(troupeBusy),
        plain_held_ms_per_eval: median(plainBusy),
      });
    }
    const asyncMetrics: Record<string, number> = {};
    if (!only || only.includes('async')) {
      // Steady state against generations, same run, same suite: evaluation times vary 10x with
      // the program (ASYNC_EVAL_MS / 10 … ASYNC_EVAL_MS), 2 evaluator slots. Utilisation: the
      // time the slots were held for evaluations over slots x the window (journal timings).
      const util: Record<string, number[]> = { generational: [], async: [] };
      for (let s = 0; s < SAMPLES; s++) {
        for (const mode of ['generational', 'async'] as const) {
          const run = await troupeRun(2, ASYNC_EVALS, ASYNC_EVAL_MS, { mode, vary: true });
          const u = run.busyMs / (run.windowMs * 2);
          util[mode]?.push(u);
          printTable(`schedule_${mode} sample ${s + 1}`, {
            evaluations: ASYNC_EVALS,
            evaluator_ms_max: ASYNC_EVAL_MS,
            window_ms: run.windowMs,
            held_ms: run.busyMs,
            slot_utilisation: u,
          });
        }
      }
      asyncMetrics.async_slot_utilisation = median(util.async ?? []);
      asyncMetrics.generational_slot_utilisation = median(util.generational ?? []);
      printTable('schedule', asyncMetrics);
    }
    if (!only || only.includes('multi-node')) {
      // Last: the in-process node agent stops, so that only the node-agent processes host sandboxes.
      await agent.stop();
      asyncMetrics.multi_node_scaling = await multiNodeScaling(
        cluster,
        server.url,
        coordinator,
        troupeRun,
      );
    }
    if (only) {
      if (Object.keys(asyncMetrics).length > 0) printResult('evolve', asyncMetrics);
      return;
    }
    const r = (k: string) => rate[k] as { troupe: number; plain: number; overhead: number };
    const scaling = r('long_2').troupe / (2 * r('long_1').troupe);
    const scalingShort4 = r('short_4').troupe / (4 * r('short_1').troupe);
    printTable('perf/evolve', {
      scaling_troupe_long_2: scaling,
      scaling_plain_long_2: r('long_2').plain / (2 * r('long_1').plain),
      scaling_troupe_short_2: r('short_2').troupe / (2 * r('short_1').troupe),
      scaling_plain_short_2: r('short_2').plain / (2 * r('short_1').plain),
      scaling_troupe_short_4: scalingShort4,
      scaling_plain_short_4: r('short_4').plain / (4 * r('short_1').plain),
    });
    printResult('evolve', {
      scaling_efficiency: scaling,
      scaling_efficiency_short_4: scalingShort4,
      // The same ratios of the plain loop: what the machine itself allows.
      plain_scaling_efficiency: r('long_2').plain / (2 * r('long_1').plain),
      plain_scaling_efficiency_short_4: r('short_4').plain / (4 * r('short_1').plain),
      overhead_fraction: Math.max(...Object.values(rate).map((x) => x.overhead)),
      overhead_fraction_long: Math.max(r('long_1').overhead, r('long_2').overhead),
      evals_per_hour: r('long_2').troupe * 3600,
      ...asyncMetrics,
    });
  } finally {
    await agent.stop();
    await coordinator.stop();
    await nc.close();
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
