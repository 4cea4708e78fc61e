/**
 * perf/rsi-desktop: the scripted RSIAgent study of `benchmarks/suites/rsi-desktop-mini`, end to
 * end as a user runs it, timed. FakeOpenAI plays every role (./role-script.ts); everything else
 * is real: `troupe run` starts an embedded cluster (nats-server, coordinator, node agent hosting
 * Docker desktop environments — the desktop image is built offline on first use), submits the
 * suite's job.yaml and prints the results. This script prints the command, the bank per phase
 * (the seed, Phase 1's output after its practice waves, each development task's input → output
 * bank, the frozen bank), each held-out
 * score and the Phase 3 aggregate, and the wall time of the `troupe run`.
 *
 *   npm run -s perf -- rsi-desktop        (or: node perf/dist/rsi-desktop/index.js after a build)
 *
 * Metrics: `wall_s` (the whole `troupe run`: cluster start, the study, cluster stop),
 * `phase1_waves`, `phase3_mean`, `phase3_scored`, `phase3_unscored`, `fake_requests` (model calls).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FakeOpenAI } from '@troupe/testkit';
import { printResult, round } from '../lib/report';
import { roleOf, scriptedStudy } from './role-script';

const REPO = path.resolve(__dirname, '../../..');
const JOB = 'benchmarks/suites/rsi-desktop-mini/job.yaml';

interface BankVersion {
  version: number;
  treeHash: string;
}

async function main(): Promise<void> {
  const fake = await FakeOpenAI.start();
  fake.setHandler(scriptedStudy);
  const dir = mkdtempSync(path.join(tmpdir(), 'perf-rsi-desktop-'));
  try {
    // The job names gpt-4o for every role: here it is FakeOpenAI.
    const models = path.join(dir, 'models.yaml');
    writeFileSync(
      models,
      [
        'models:',
        '  gpt-4o:',
        `    baseURL: ${fake.baseURL}`,
        '    model: fake-model',
        '    inputUsdPer1M: 0',
        '    outputUsdPer1M: 0',
        '',
      ].join('\n'),
    );
    const html = path.join(dir, 'report.html');
    const args = ['run', JOB, '--models', models, '--json', '--html', html];
    console.log(`$ troupe ${args.join(' ')}`);
    const started = process.hrtime.bigint();
    const stdout = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, [path.join(REPO, 'client/bin/troupe.js'), ...args], {
        cwd: REPO,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const out: Buffer[] = [];
      child.stdout.on('data', (b: Buffer) => out.push(b));
      child.on('error', reject);
      child.on('close', (code) => {
        const text = Buffer.concat(out).toString('utf8');
        if (code === 0) resolve(text);
        else reject(new Error(`troupe run exited ${code}:\n${text}`));
      });
    });
    const wallS = Number(process.hrtime.bigint() - started) / 1e9;

    const results = JSON.parse(stdout) as {
      jobId: string;
      tasks: {
        taskId: string;
        status: string;
        score: number;
        error?: string;
        details?: { seedTreeHash?: string };
      }[];
    };
    const study = results.tasks.find((t) => t.taskId === 'study');
    if (!study || study.status !== 'TASK_PASSED') {
      throw new Error(`the study did not pass: ${JSON.stringify(study ?? results)}`);
    }
    const files = `${html}.files/study`;
    const read = <T>(name: string): T =>
      JSON.parse(readFileSync(path.join(files, name), 'utf8')) as T;
    const phase1 = read<{ output: BankVersion; ended: string; waves: number }>('phase1.json');
    const phase2 = read<{
      tasks: {
        taskId: string;
        status: string;
        verdict: string;
        attempts: number;
        projects: number;
        bankIn: BankVersion;
        bankOut: BankVersion;
      }[];
      frozen: BankVersion;
    }>('phase2.json');
    const phase3 = read<{
      frozen: BankVersion;
      tasks: { taskId: string; status: string; score?: number; detail?: string }[];
      meanScore: number;
      scored: number;
      unscored: number;
    }>('phase3.json');

    const v = (b: BankVersion) => `v${b.version} ${b.treeHash}`;
    console.log(`\njob ${results.jobId}: study ${study.status}, score ${study.score}`);
    console.log(`seed bank: v1 ${study.details?.seedTreeHash ?? '?'}`);
    console.log(
      `Phase 1 (${phase1.ended} after ${phase1.waves} wave${phase1.waves === 1 ? '' : 's'}): bank ${v(phase1.output)}`,
    );
    for (const t of phase2.tasks) {
      console.log(
        `Phase 2 ${t.taskId}: ${t.status} ${t.verdict}, ${t.attempts} attempts, ${t.projects} projects; bank ${v(t.bankIn)} -> ${v(t.bankOut)}`,
      );
    }
    console.log(`Phase 2 frozen bank: ${v(phase2.frozen)}`);
    for (const t of phase3.tasks) {
      console.log(`Phase 3 ${t.taskId}: ${t.status} score ${t.score ?? '-'} (${t.detail ?? ''})`);
    }
    console.log(
      `Phase 3 on ${v(phase3.frozen)}: mean ${phase3.meanScore} (${phase3.scored} scored, ${phase3.unscored} unscored)`,
    );
    const byRole: Record<string, number> = {};
    for (const r of fake.chatRequests) byRole[roleOf(r)] = (byRole[roleOf(r)] ?? 0) + 1;
    console.log(`model calls by role: ${JSON.stringify(byRole)}`);
    console.log(`wall time of troupe run: ${wallS.toFixed(1)} s`);
    printResult('rsi-desktop', {
      wall_s: round(wallS, 1),
      phase1_waves: phase1.waves,
      phase3_mean: phase3.meanScore,
      phase3_scored: phase3.scored,
      phase3_unscored: phase3.unscored,
      fake_requests: fake.chatRequests.length,
    });
  } finally {
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
