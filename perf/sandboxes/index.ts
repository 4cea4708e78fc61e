/**
 * perf/sandboxes: what the sandbox layer costs on top of Docker itself, measured against
 * baselines taken in the same run on the same image (troupe-busybox):
 *
 * - cold cycle: `backend.create → exec true → destroy` vs `docker run --rm <image> true` (the
 *   Debian docker CLI): `cold_cycle_ratio` (target ≤ 1.15)
 * - warm pool: `pool.acquire()` from a filled pool: `warm_acquire_p50_ms` (target ≤ 50)
 * - exec: `sandbox.exec(['true'])` vs a raw dockerode exec of `true` (create, start, demux,
 *   inspect) in the same container: `exec_overhead_ratio` (target ≤ 1.2)
 * - exec through the sandbox actor (an ask over NATS to a standalone node agent: request/reply,
 *   validation, one turn) vs `sandbox.exec` of the library: `sandbox_actor_exec_overhead_ratio`
 *
 * `--python` also times a cold cycle and an `import sklearn` in troupe-python (building the image
 * first when it is missing, ~4 min on a fresh machine). `--samples N` changes the sample count.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import { ActorSystem } from '@troupe/actors';
import {
  DockerSandboxBackend,
  ImageManager,
  NodeAgent,
  sandboxRef,
  WarmPool,
} from '@troupe/node-agent';
import { ensureDocker, randomClusterName, startNatsServer } from '@troupe/testkit';
import { median, nowUs, printResult, printTable, quantile } from '../lib/report';

const run = promisify(execFile);
const DOCKER_CLI = existsSync('/usr/bin/docker') ? '/usr/bin/docker' : 'docker';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const SAMPLES = Number(arg('--samples') ?? 15);
const WITH_PYTHON = process.argv.includes('--python');

const ms = (us: number): number => us / 1000;

/** One exec of `true` straight through dockerode: the floor any exec wrapper stands on. */
async function rawExec(docker: Docker, container: Docker.Container): Promise<number> {
  const exec = await container.exec({
    Cmd: ['true'],
    User: '1000:1000',
    AttachStdout: true,
    AttachStderr: true,
  });
  const stream = await exec.start({ hijack: true, stdin: false });
  await new Promise<void>((resolve) => {
    const sink = { write: () => true } as unknown as NodeJS.WritableStream;
    docker.modem.demuxStream(stream, sink, sink);
    stream.once('end', () => resolve());
    stream.once('close', () => resolve());
  });
  const info = await exec.inspect();
  return info.ExitCode ?? -1;
}

async function main(): Promise<void> {
  const docker = await ensureDocker();
  const images = new ImageManager({ docker });
  const { ref: image } = await images.ensure('busybox');
  const cluster = randomClusterName();
  const labels = { cluster, host: 'perf', actor: 'sandbox/perf' };
  const backend = new DockerSandboxBackend({ docker });
  const metrics: Record<string, number> = {};
  try {
    // Cold cycle vs docker run --rm, interleaved so drift hits both alike.
    const ours: number[] = [];
    const raw: number[] = [];
    for (let i = 0; i < SAMPLES + 2; i++) {
      let t0 = nowUs();
      const sb = await backend.create({ image, labels });
      const r = await sb.exec(['true']);
      await sb.destroy();
      const oursUs = nowUs() - t0;
      if (r.exitCode !== 0) throw new Error(`exec true exited ${r.exitCode}`);
      t0 = nowUs();
      await run(DOCKER_CLI, ['run', '--rm', image, 'true']);
      const rawUs = nowUs() - t0;
      if (i >= 2) {
        ours.push(oursUs);
        raw.push(rawUs);
      }
    }
    metrics.cold_cycle_ratio = median(ours) / median(raw);
    printTable('cold cycle (ms): create → exec true → destroy vs docker run --rm', {
      sandbox_p50: ms(median(ours)),
      sandbox_p90: ms(quantile(ours, 0.9)),
      docker_run_rm_p50: ms(median(raw)),
      docker_run_rm_p90: ms(quantile(raw, 0.9)),
      ratio: metrics.cold_cycle_ratio,
      samples: SAMPLES,
    });

    // Warm pool: acquire from a filled pool (refilled, untimed, between samples).
    const pool = new WarmPool({ backend, spec: { image, labels }, size: 3 });
    const acquires: number[] = [];
    try {
      for (let i = 0; i < SAMPLES + 2; i++) {
        await pool.filled();
        const t0 = nowUs();
        const sb = await pool.acquire();
        const us = nowUs() - t0;
        if (i >= 2) acquires.push(us);
        await sb.destroy();
        pool.release(sb.id);
      }
    } finally {
      await pool.close();
    }
    metrics.warm_acquire_p50_ms = ms(median(acquires));
    printTable('warm pool acquire (ms)', {
      p50: metrics.warm_acquire_p50_ms,
      p90: ms(quantile(acquires, 0.9)),
      max: ms(Math.max(...acquires)),
    });

    // Exec overhead in one sandbox: ours vs raw dockerode, interleaved.
    const sb = await backend.create({ image, labels });
    try {
      const container = docker.getContainer(sb.metadata().containerId!);
      const mine: number[] = [];
      const bare: number[] = [];
      for (let i = 0; i < SAMPLES * 2 + 3; i++) {
        let t0 = nowUs();
        await sb.exec(['true']);
        const a = nowUs() - t0;
        t0 = nowUs();
        await rawExec(docker, container);
        const b = nowUs() - t0;
        if (i >= 3) {
          mine.push(a);
          bare.push(b);
        }
      }
      metrics.exec_overhead_ratio = median(mine) / median(bare);
      printTable('exec true (ms): sandbox.exec vs raw dockerode exec', {
        sandbox_p50: ms(median(mine)),
        raw_p50: ms(median(bare)),
        ratio: metrics.exec_overhead_ratio,
      });
    } finally {
      await sb.destroy();
    }

    // Exec through the sandbox actor vs the library, interleaved, on a standalone node agent.
    const nats = await startNatsServer();
    const agent = await NodeAgent.start(
      { cluster, hostId: 'perf-node', nats: { servers: nats.url }, standalone: true },
      { docker },
    );
    const client = await ActorSystem.start({ cluster, servers: nats.url });
    const direct = await backend.create({ image, labels });
    try {
      const ref = sandboxRef(client, 'perf-sandbox');
      await ref.ask('create', { spec: { image } }, { timeoutMs: 60_000 });
      const viaActor: number[] = [];
      const viaLibrary: number[] = [];
      for (let i = 0; i < SAMPLES * 2 + 3; i++) {
        let t0 = nowUs();
        await ref.ask('exec', { cmd: ['true'] });
        const a = nowUs() - t0;
        t0 = nowUs();
        await direct.exec(['true']);
        const b = nowUs() - t0;
        if (i >= 3) {
          viaActor.push(a);
          viaLibrary.push(b);
        }
      }
      metrics.sandbox_actor_exec_overhead_ratio = median(viaActor) / median(viaLibrary);
      printTable('exec true (ms): sandbox actor ask vs sandbox.exec', {
        actor_p50: ms(median(viaActor)),
        actor_p90: ms(quantile(viaActor, 0.9)),
        library_p50: ms(median(viaLibrary)),
        ratio: metrics.sandbox_actor_exec_overhead_ratio,
      });
      await ref.ask('destroy', {});
    } finally {
      await direct.destroy();
      await client.shutdown();
      await agent.stop();
      await nats.stop();
    }

    if (WITH_PYTHON) {
      const py = await images.ensure('python', {
        onProgress: (line) => console.error(line),
      });
      const t0 = nowUs();
      const box = await backend.create({ image: py.ref, labels });
      const created = nowUs();
      const r = await box.exec([
        'python3',
        '-c',
        'import numpy, scipy, sklearn; print(sklearn.__version__)',
      ]);
      const imported = nowUs();
      await box.destroy();
      if (r.exitCode !== 0) throw new Error(`python import failed: ${r.stderr}`);
      metrics.python_cold_create_ms = ms(created - t0);
      metrics.python_sklearn_import_ms = ms(imported - created);
      printTable('troupe-python', {
        image: py.ref,
        built_now: String(py.built),
        create_ms: metrics.python_cold_create_ms,
        import_sklearn_ms: metrics.python_sklearn_import_ms,
        sklearn: r.stdout.trim(),
      });
    }
  } finally {
    await backend.close();
  }
  printResult('sandboxes', metrics);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
