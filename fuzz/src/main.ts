/**
 * npm run fuzz -- [--cases N] [--seed S] [--target NAME[,NAME…]] [--path P]
 *
 * Property-based fuzzing (fast-check) of Troupe's untrusted input boundaries against the real
 * parsers and servers: job specs, task files, actor wire messages, agent tool-call arguments and
 * gRPC requests. Each case must be answered with success or an error naming the field (never
 * INTERNAL/UNKNOWN, a crash or an unhandled rejection), a valid request must succeed after it,
 * and no untrusted parse may block the event loop for more than 200 ms. Prints a line per
 * target and ends with `{"suite":"fuzz","metrics":{"cases":…,"wrong_answers":…}}`.
 */
import { runTarget, type TargetReport } from './run-target';
import { FUZZ_TARGETS } from './targets';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const CASES = Number(arg('--cases') ?? 10_000);
const SEED = Number(arg('--seed') ?? Date.now() % 2 ** 31);
const PATH = arg('--path');
const ONLY = arg('--target')?.split(',');

/** Errors that escaped every handler while a target ran: each is a wrong answer. */
const escaped: string[] = [];
process.on('unhandledRejection', (reason) =>
  escaped.push(`unhandled rejection: ${String(reason)}`),
);
process.on('uncaughtException', (err) =>
  escaped.push(`uncaught exception: ${err.stack ?? String(err)}`),
);

async function main(): Promise<void> {
  if (!Number.isInteger(CASES) || CASES < 1) throw new Error('--cases must be a positive integer');
  if (!Number.isInteger(SEED)) throw new Error('--seed must be an integer');
  const known = FUZZ_TARGETS.map((t) => t.name);
  const unknown = ONLY?.filter((n) => !known.includes(n)) ?? [];
  if (unknown.length > 0)
    throw new Error(`unknown --target ${unknown.join(', ')} (known: ${known.join(', ')})`);
  const targets = FUZZ_TARGETS.filter((t) => !ONLY || ONLY.includes(t.name));
  console.log(
    `fuzz: seed ${SEED}, ${CASES} cases per target, targets ${targets.map((t) => t.name).join(', ')}`,
  );
  const reports: TargetReport[] = [];
  const t0 = performance.now();
  for (const target of targets) {
    console.log(`${target.name}: ${target.description}`);
    const instance = await target.start();
    const before = escaped.length;
    let report: TargetReport;
    try {
      report = await runTarget(target, instance, {
        cases: CASES,
        seed: SEED,
        ...(PATH !== undefined ? { path: PATH } : {}),
        progress: (line) => console.log(line),
      });
    } finally {
      await instance.stop();
    }
    const escapes = escaped.slice(before);
    report.wrong += escapes.length;
    for (const e of escapes.slice(0, 3))
      report.examples.push({ index: -1, reason: e, input: '(unknown case)' });
    reports.push(report);
    console.log(
      `${target.name}: ${report.cases} cases, ${report.wrong} wrong, max block ${report.maxBlockMs.toFixed(1)} ms, p99 case ${report.p99CaseMs.toFixed(1)} ms, ${(report.wallMs / 1000).toFixed(1)} s`,
    );
    for (const w of report.examples) {
      console.log(`  WRONG #${w.index}: ${w.reason}`);
      console.log(`    input: ${w.input}`);
      if (w.index >= 0) {
        console.log(
          `    replay: npm run fuzz -- --target ${target.name} --seed ${SEED} --path ${w.index}`,
        );
      }
    }
  }
  const metrics: Record<string, number> = {
    cases: reports.reduce((n, r) => n + r.cases, 0),
    wrong_answers: reports.reduce((n, r) => n + r.wrong, 0),
    seed: SEED,
    wall_s: Math.round((performance.now() - t0) / 100) / 10,
  };
  for (const r of reports) {
    const key = r.target.replace(/-/g, '_');
    metrics[`${key}_cases`] = r.cases;
    metrics[`${key}_wrong`] = r.wrong;
    metrics[`${key}_max_block_ms`] = Math.round(r.maxBlockMs * 10) / 10;
  }
  console.log(JSON.stringify({ suite: 'fuzz', metrics }));
  process.exitCode = metrics['wrong_answers'] === 0 ? 0 : 1;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(2);
});
