import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { waitFor } from '@troupe/testkit';
import { repoRoot } from '../../src/repo-root';
import { renderSoakReport } from '../../src/soak/soak-report';
import { runSoak, soakMetrics } from '../../src/soak/soak-run';

// CI's short soak (npm run soak -- --profile long is the real one): a real cluster of processes
// runs shell-tasks jobs for 120 s while every process is sampled. Two decoy Node processes are
// sampled alongside: one leaks (retained heap, open files, live timers), one only churns
// garbage. The detector must flag every series of the leaking one and none of the quiet one;
// the cluster's processes must be sampled with every series. Their verdicts are printed, not
// asserted: 120 s is too short to judge a real slow leak (the long profile does).

/** Retains 0.5 MB/s, opens a file and starts a timer every second. */
const LEAKY = `
const fs = require('node:fs');
const kept = [];
setInterval(() => {
  kept.push(Buffer.alloc(256 * 1024, 1).toString('latin1'));
}, 500);
setInterval(() => {
  kept.push(fs.openSync('/dev/null', 'r'));
  kept.push(setInterval(() => undefined, 60_000));
}, 1000);
`;

/**
 * Allocates and drops garbage (about 200,000 objects a second), holds one timer. Each batch is
 * small next to the young generation, so a scavenge finds almost nothing alive: V8 neither grows
 * its new space nor promotes garbage into the old one at some random minute of the run, a step
 * in RSS that a 60 s window would read as a trend (it did on a loaded CI machine). The decoy also
 * runs with its new space pinned (see `decoy`).
 */
const QUIET = `
let sink = 0;
setInterval(() => {
  const a = Array.from({ length: 2000 }, (_, i) => ({ i, s: 'x'.repeat(20) }));
  sink += a.length;
}, 10);
`;

let dir: string;
const decoys: ChildProcess[] = [];

beforeAll(async () => {
  // The cluster's processes preload the probe from fuzz/dist (as npm run soak builds it).
  execFileSync('npx', ['tsc', '-b', 'fuzz/tsconfig.json'], { cwd: repoRoot(), stdio: 'inherit' });
  dir = await mkdtemp(path.join(os.tmpdir(), 'troupe-soak-test-'));
}, 180_000);

afterAll(async () => {
  for (const d of decoys) d.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

function decoy(code: string): ChildProcess {
  const probe = path.join(repoRoot(), 'fuzz', 'dist', 'soak', 'process-probe.js');
  // A new space of fixed size (8 MB semi-spaces from the start): its growth is V8's sizing, not
  // the decoy's behaviour, and would land in RSS whenever the heuristics decide.
  const v8 = ['--min-semi-space-size=8', '--max-semi-space-size=8'];
  const child = spawn(process.execPath, [...v8, '-e', code], {
    stdio: 'ignore',
    env: {
      ...process.env,
      NODE_OPTIONS: `--require ${probe}`,
      TROUPE_SOAK_PROBE_DIR: dir,
      TROUPE_SOAK_PROBE_MS: '1000',
    },
  });
  decoys.push(child);
  return child;
}

test('a short soak samples every process and the detector tells a leak from churn', async () => {
  const leaky = decoy(LEAKY);
  const quiet = decoy(QUIET);
  await waitFor(() => [leaky, quiet].every((c) => existsSync(path.join(dir, `${c.pid}.json`))), {
    timeoutMs: 30_000,
    message: 'decoy probes reporting',
  });
  const lines: string[] = [];
  const result = await runSoak({
    durationS: 120,
    maxTasks: 20_000,
    sampleS: 2,
    backend: 'process',
    slots: 4,
    jobTasks: 10,
    parallelJobs: 2,
    // Finished jobs are kept (the long profile deletes them): deleting six jobs a second roughly
    // doubles nats-server's work, on a 2-core CI machine running other suites beside this one
    // (the two CI runs with it each timed out one load-sensitive test elsewhere).
    jobRetentionMs: null,
    image: 'troupe-busybox:latest',
    dir,
    extraProcesses: [
      { name: 'decoy-leaky', pid: leaky.pid!, probeDir: dir },
      { name: 'decoy-quiet', pid: quiet.pid!, probeDir: dir },
    ],
    progress: (l) => lines.push(l),
  });
  const metrics = soakMetrics(result);
  const byName = new Map(result.processes.map((s) => [s.process.name, s]));
  process.stdout.write(
    `${lines.join('\n')}\n${result.problems.join('\n')}\n${JSON.stringify({ suite: 'soak', metrics })}\n`,
  );

  // The workload ran and passed.
  expect(result.tally.failures).toEqual([]);
  expect(result.tally.tasks).toBeGreaterThan(0);
  expect(result.exited).toEqual([]);
  expect(lines.some((l) => /s: \d+ tasks in \d+ jobs/.test(l))).toBe(true);

  // Every process was sampled through the run, with every series it has.
  for (const name of ['coordinator', 'node-agent', 'nats-server', 'decoy-leaky', 'decoy-quiet']) {
    const s = byName.get(name)!;
    expect(s.lost).toBeUndefined();
    // 120 s at one sample per 2 s; a loaded machine may stretch the interval.
    expect(s.samples.length).toBeGreaterThan(25);
    for (const x of s.samples) {
      expect(x.rssMb).toBeGreaterThan(1);
      expect(x.fds).toBeGreaterThan(2);
    }
    // nats-server: its Go heap after a collection and goroutines (pprof), and what it stores;
    // its heap and RSS are judged as the block cache and the rest, and shown whole.
    const keys =
      name === 'nats-server'
        ? [
            'fds',
            'handles',
            'storedMb',
            'blockBuffersMb',
            'heapOutsideCacheMb',
            'rssOutsideCacheMb',
          ]
        : ['rssMb', 'heapMb', 'fds', 'handles'];
    expect(Object.keys(s.verdicts).sort()).toEqual([...keys].sort());
    expect(Object.keys(s.shown ?? {}).sort()).toEqual(
      name === 'nats-server' ? ['heapMb', 'rssMb'] : [],
    );
    for (const v of Object.values(s.verdicts)) expect(v.verdict).not.toBe('too-short');
  }
  const node = byName.get('coordinator')!.samples.at(-1)!;
  expect(node.heapMb).toBeGreaterThan(5);
  expect(node.handles).toBeGreaterThan(0);
  expect(node.resources?.['Timeout']).toBeGreaterThan(0);
  const nats = byName.get('nats-server')!.samples.at(-1)!;
  // A JetStream server's live heap is MBs, its goroutines dozens, and the jobs' records stored.
  expect(nats.heapMb).toBeGreaterThan(1);
  expect(nats.heapMb).toBeLessThan(nats.rssMb);
  expect(nats.heapOutsideCacheMb).toBeCloseTo(nats.heapMb! - nats.blockBuffersMb!, 6);
  expect(nats.rssOutsideCacheMb).toBeCloseTo(nats.rssMb - nats.blockBuffersMb!, 6);
  expect(nats.resources?.['goroutines']).toBeGreaterThan(20);
  expect(nats.storedMb).toBeGreaterThan(0.1);

  // The detector: the leak on every series, nothing on churn.
  const leak = byName.get('decoy-leaky')!.verdicts;
  for (const key of ['rssMb', 'heapMb', 'fds', 'handles'] as const) {
    expect([key, leak[key]?.verdict]).toEqual([key, 'growth']);
  }
  const calm = byName.get('decoy-quiet')!.verdicts;
  for (const key of ['heapMb', 'fds', 'handles'] as const) {
    expect([key, calm[key]?.verdict]).toEqual([key, 'ok']);
  }
  expect(result.verdict).toBe('fail');
  expect(result.problems.some((p) => p.startsWith('decoy-leaky heapMb: growth'))).toBe(true);
  expect(result.problems.some((p) => p.startsWith('decoy-quiet'))).toBe(false);
  expect(metrics['growth_series']).toBeGreaterThanOrEqual(4);
  expect(typeof metrics['rss_slope_mb_per_h']).toBe('number');

  // The report: a chart per series of every process (nats-server's eight: its heap and RSS,
  // shown, and the three they are judged through, besides fds, handles and stored bytes).
  const html = renderSoakReport(result, metrics);
  expect(html.match(/<svg /g)?.length).toBe(4 * 4 + 8);
  expect(html).toContain('judged through block cache (file store) and heap outside the block');
  expect(typeof metrics['nats_server_heap_outside_cache_mb_end']).toBe('number');
  expect(typeof metrics['nats_server_rss_outside_cache_mb_end']).toBe('number');
  expect(typeof metrics['nats_server_rss_slope_mb_per_h']).toBe('number');
  expect(html).toContain('decoy-leaky');
}, 480_000);
