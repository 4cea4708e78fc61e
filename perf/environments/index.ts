/**
 * perf/environments: the desktop environment's latencies as an agent sees them, through the
 * library (one long-lived agent per environment, no process per call), on troupe-desktop (built
 * first when missing):
 *
 * - `screenshot_p50_ms` / `_p90_`: `env.screenshot()` of a 1280×800 desktop with an xterm open,
 *   PNG bytes on the host (target ≤ 100)
 * - `action_p50_ms` / `_p90_`: `env.act()` alternating MOVE_TO and CLICK on the desktop (target
 *   ≤ 50); `typing_p50_ms`: TYPING of 10 characters (xdotool)
 * - `boot_ms`: `backend.create` (container start, display, window manager, golden snapshot)
 * - `restore_ms`: `env.reset()` (end apps, untar the home directory)
 * - `docker_exec_true_p50_ms`: a raw `docker exec true` in the same container — what a process
 *   per action would cost at the least, measured in the same run as the baseline
 *
 * and the `vm` backend's `vm_*` metrics and `idle_vms_per_host` (see `vm.ts`; skipped with
 * `--no-vm` or when the VM image is not built). `--samples N` (default 30).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { DesktopEnvironmentBackend, ImageManager } from '@troupe/node-agent';
import { ensureDocker, randomClusterName } from '@troupe/testkit';
import { nowUs, printResult, printTable, quantile, round } from '../lib/report';
import { measureVm } from './vm';

const run = promisify(execFile);
const DOCKER_CLI = existsSync('/usr/bin/docker') ? '/usr/bin/docker' : 'docker';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const SAMPLES = Number(arg('--samples') ?? 30);

async function timeEach(n: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = nowUs();
    await fn(i);
    out.push((nowUs() - t) / 1000);
  }
  return out;
}

async function main(): Promise<void> {
  const docker = await ensureDocker();
  const image = (await new ImageManager({ docker }).ensure('desktop')).ref;
  const cluster = randomClusterName();
  const backend = new DesktopEnvironmentBackend({ docker, readyTimeoutMs: 300_000 });
  const metrics: Record<string, number | string> = {};
  try {
    const t0 = nowUs();
    const env = await backend.create({
      image,
      width: 1280,
      height: 800,
      memoryMb: 1024,
      cpus: 1,
      pidsLimit: 512,
      labels: { cluster, host: 'perf', actor: 'environment/perf', job: '' },
    });
    metrics['boot_ms'] = round((nowUs() - t0) / 1000, 1);
    await env.launch(['xterm', '-T', 'Terminal'], {
      waitTitle: 'Terminal|troupe@',
      timeoutMs: 120_000,
    });
    // Warm-up: the first screenshot maps the framebuffer, the first action loads XTEST.
    await env.screenshot();
    await env.act({ action_type: 'MOVE_TO', x: 1, y: 1 });

    const shots = await timeEach(SAMPLES, () => env.screenshot());
    const actions = await timeEach(SAMPLES, (i) =>
      env.act(
        i % 2 === 0
          ? { action_type: 'MOVE_TO', x: 100 + i, y: 100 + i }
          : { action_type: 'CLICK', x: 5 + i, y: 700 },
      ),
    );
    const typing = await timeEach(Math.min(SAMPLES, 10), () =>
      env.act({ action_type: 'TYPING', text: 'echo 12345' }),
    );
    const container = docker.getContainer(env.backendId);
    const execs = await timeEach(Math.min(SAMPLES, 10), () =>
      run(DOCKER_CLI, ['exec', container.id, 'true']),
    );
    const t1 = nowUs();
    await env.reset();
    metrics['restore_ms'] = round((nowUs() - t1) / 1000, 1);
    metrics['screenshot_p50_ms'] = round(quantile(shots, 0.5), 1);
    metrics['screenshot_p90_ms'] = round(quantile(shots, 0.9), 1);
    metrics['action_p50_ms'] = round(quantile(actions, 0.5), 1);
    metrics['action_p90_ms'] = round(quantile(actions, 0.9), 1);
    metrics['typing_p50_ms'] = round(quantile(typing, 0.5), 1);
    metrics['docker_exec_true_p50_ms'] = round(quantile(execs, 0.5), 1);
    metrics['action_vs_docker_exec_ratio'] = round(
      Number(metrics['action_p50_ms']) / Number(metrics['docker_exec_true_p50_ms']),
      3,
    );
    printTable('desktop environment (ms)', {
      image,
      samples: SAMPLES,
      ...metrics,
    });
  } finally {
    await backend.close();
  }
  if (
    !process.argv.includes('--no-vm') &&
    existsSync('/var/lib/troupe/vm-images/vm-desktop/disk.qcow2')
  ) {
    const vm = await measureVm(SAMPLES, timeEach);
    printTable('vm environment (ms)', vm);
    Object.assign(metrics, vm);
  }
  printResult('environments', metrics);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
