/**
 * npm run chaos -- [--profile short|long] [--schedules N] [--seed S] [--minutes M]: a multi-process Troupe
 * cluster (3 JetStream servers, 2 coordinators, 3 node agents) runs shell-tasks jobs while a
 * seeded schedule kills, stops, restarts and partitions its processes; each schedule's
 * invariants are checked and recovery times measured (docs/reliability.md, Chaos). Ends with
 * {"suite":"chaos","metrics":{"schedules":…,"violations":…,"recovery_p99_s":…,…}}.
 * `--minutes M` (or Ctrl-C) starts no schedule after M minutes and reports those run.
 * Environment: TROUPE_CHAOS_DOCKER_RESTART=1 adds the Docker daemon restart to the long profile.
 */
import { chaosProfile } from './chaos-profile';
import { runChaos } from './run-chaos';

function parseArgs(argv: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i] ?? '';
    const value = argv[i + 1];
    if (
      !['--profile', '--schedules', '--seed', '--minutes'].includes(name) ||
      value === undefined
    ) {
      throw new RangeError(
        `unknown or incomplete option ${name} (--profile, --schedules, --seed, --minutes)`,
      );
    }
    out[name.slice(2)] = value;
    i++;
  }
  return out;
}

function positiveInt(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new RangeError(`--${name}: must be a non-negative integer, got ${value}`);
  return n;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const profile = chaosProfile(
    args['profile'] ?? 'long',
    process.env['TROUPE_CHAOS_DOCKER_RESTART'] === '1',
  );
  const seed = positiveInt('seed', args['seed']) ?? Math.floor(Math.random() * 1_000_000);
  const schedules = positiveInt('schedules', args['schedules']);
  const log = (line: string) =>
    console.error(`[chaos ${new Date().toISOString().slice(11, 19)}] ${line}`);
  log(`profile ${profile.name}, first seed ${seed} (replay: --seed ${seed})`);
  const stop = new AbortController();
  process.once('SIGINT', () => {
    log('interrupted: finishing the running schedule (Ctrl-C again to quit at once)');
    stop.abort(new Error('interrupted'));
    process.once('SIGINT', () => process.exit(130));
  });
  const minutes = positiveInt('minutes', args['minutes']);
  const timer =
    minutes === undefined
      ? undefined
      : setTimeout(() => stop.abort(new Error(`--minutes ${minutes} reached`)), minutes * 60_000);
  const summary = await runChaos({
    profile,
    seed,
    signal: stop.signal,
    ...(schedules !== undefined ? { schedules } : {}),
    log,
  });
  clearTimeout(timer);
  console.log(JSON.stringify({ suite: 'chaos', metrics: summary.metrics }));
  process.exitCode = summary.metrics['violations'] === 0 ? 0 : 1;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(2);
});
