/**
 * npm run soak -- [--profile short|long] [--minutes M] [--tasks N] [--backend docker|process]
 *   [--sample-s S] [--slots N] [--job-tasks N] [--html FILE]
 *
 * A long run of shell-tasks jobs on a real multi-process cluster (nats-server, `troupe
 * coordinator`, `troupe node-agent`) sampling RSS, heap, file descriptors and active handles of
 * every process; fails on a growth trend (docs/reliability.md, Soak). Prints progress every
 * 10 s, writes an HTML report with a chart per series, and ends with
 * `{"suite":"soak","metrics":{"rss_slope_mb_per_h":…,"heap_slope_mb_per_h":…,…}}`.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { renderSoakReport } from './soak-report';
import { runSoak, soakMetrics } from './soak-run';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function positive(name: string, fallback: number): number {
  const raw = arg(name);
  const v = raw === undefined ? fallback : Number(raw);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return v;
}

/** The two profiles: CI's short one and the long one the issue asks for. */
const PROFILES = {
  short: { minutes: 2.5, tasks: 20_000, sampleS: 2 },
  long: { minutes: 30, tasks: 20_000, sampleS: 5 },
} as const;

async function main(): Promise<void> {
  const profileName = arg('--profile') ?? 'short';
  if (profileName !== 'short' && profileName !== 'long') {
    throw new Error('--profile must be short or long');
  }
  const profile = PROFILES[profileName];
  const backend = arg('--backend') ?? 'docker';
  if (backend !== 'docker' && backend !== 'process') {
    throw new Error('--backend must be docker or process');
  }
  const minutes = positive('--minutes', profile.minutes);
  const html = path.resolve(arg('--html') ?? `soak-report-${profileName}.html`);
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort(new Error('interrupted')));
  const result = await runSoak({
    durationS: minutes * 60,
    maxTasks: Math.floor(positive('--tasks', profile.tasks)),
    sampleS: positive('--sample-s', profile.sampleS),
    backend,
    slots: Math.floor(positive('--slots', 4)),
    jobTasks: Math.floor(positive('--job-tasks', 100)),
    parallelJobs: 2,
    image: 'troupe-busybox:latest',
    signal: controller.signal,
    progress: (line) => console.log(line),
  });
  const metrics = soakMetrics(result);
  writeFileSync(html, renderSoakReport(result, metrics));
  // The raw samples, to look at or judge again.
  const samples = path.join(result.dir, 'samples.json');
  writeFileSync(
    samples,
    JSON.stringify(
      result.processes.map(({ process: { lastGoProfile: _, ...p }, samples: x }) => ({
        process: p,
        samples: x,
      })),
    ),
  );
  // A Go process's last heap profile (nats-server's), to see what its heap holds at the end.
  for (const { process: p } of result.processes) {
    if (p.lastGoProfile === undefined) continue;
    const file = path.join(result.dir, `${p.name}-heap.txt`);
    writeFileSync(file, p.lastGoProfile);
    console.log(`soak: ${p.name}'s last heap profile (pprof debug=1 text) in ${file}`);
  }
  console.log(`soak: ${result.verdict}; report ${html}; samples ${samples}; logs ${result.dir}`);
  for (const p of result.problems) console.log(`  ${p}`);
  console.log(JSON.stringify({ suite: 'soak', metrics }));
  process.exitCode = result.verdict === 'pass' ? 0 : 1;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(2);
});
