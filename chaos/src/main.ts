/**
 * npm run chaos -- [--profile short|long] [--schedules N] [--seed S] [--minutes M]
 * [--faults kind[:role],…] [--tasks N]: a multi-process Troupe
 * cluster (3 JetStream servers, 2 coordinators, 3 node agents) runs shell-tasks jobs while a
 * seeded schedule kills, stops, restarts and partitions its processes; each schedule's
 * invariants are checked and recovery times measured (docs/reliability.md, Chaos). Ends with
 * {"suite":"chaos","metrics":{"schedules":…,"violations":…,"recovery_p99_s":…,…}}.
 * `--minutes M` (or Ctrl-C, or SIGTERM) starts no schedule after M minutes and reports those run;
 * a second Ctrl-C or SIGTERM quits at once, with every process of the cluster killed first.
 * `--faults kill9:leader` makes every fault of the schedules one of the kinds listed, and every
 * kill9/sigstop hit one of the roles listed (coordinator, leader, node-agent, nats). `--tasks N`
 * gives each schedule's job N tasks instead of the profile's (a longer job outlasts more faults).
 * Environment: TROUPE_CHAOS_DOCKER_RESTART=0 leaves the Docker daemon restart out of the long
 * profile (it stops every container on the machine);
 * TROUPE_CHAOS_LOG_DIR=dir keeps every coordinator's and node agent's output in dir.
 */
import { ChaosCluster } from './chaos-cluster';
import { chaosProfile, type ChaosProfile } from './chaos-profile';
import { FaultKind, PROCESS_ROLES, type ProcessRole } from './fault-schedule';
import { runChaos } from './run-chaos';

function parseArgs(argv: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i] ?? '';
    const value = argv[i + 1];
    if (
      !['--profile', '--schedules', '--seed', '--minutes', '--faults', '--tasks'].includes(name) ||
      value === undefined
    ) {
      throw new RangeError(
        `unknown or incomplete option ${name} (--profile, --schedules, --seed, --minutes, --faults, --tasks)`,
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

/** `--faults kill9:leader,nats-restart`: the profile with only those kinds (and kill/stop roles). */
function restrictFaults(profile: ChaosProfile, value: string | undefined): ChaosProfile {
  if (value === undefined) return profile;
  const kinds = new Set<FaultKind>();
  const roles = new Set<ProcessRole>();
  const allKinds: readonly string[] = Object.values(FaultKind);
  for (const item of value.split(',')) {
    const [kind = '', role] = item.split(':');
    if (!allKinds.includes(kind)) {
      throw new RangeError(`--faults: kind must be one of ${allKinds.join(', ')}, got '${kind}'`);
    }
    kinds.add(kind as FaultKind);
    if (role === undefined) continue;
    if (kind !== FaultKind.KILL && kind !== FaultKind.STOP) {
      throw new RangeError(`--faults: only kill9 and sigstop take a role, got '${item}'`);
    }
    if (!(PROCESS_ROLES as readonly string[]).includes(role)) {
      throw new RangeError(
        `--faults: role must be one of ${PROCESS_ROLES.join(', ')}, got '${role}'`,
      );
    }
    roles.add(role as ProcessRole);
  }
  return { ...profile, kinds: [...kinds], ...(roles.size > 0 ? { roles: [...roles] } : {}) };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  let profile = restrictFaults(
    chaosProfile(args['profile'] ?? 'long', process.env['TROUPE_CHAOS_DOCKER_RESTART'] !== '0'),
    args['faults'],
  );
  const tasks = positiveInt('tasks', args['tasks']);
  if (tasks !== undefined) {
    if (tasks < 1 || tasks > 2_000)
      throw new RangeError(`--tasks: must be 1 to 2000, got ${tasks}`);
    profile = { ...profile, tasks };
  }
  const seed = positiveInt('seed', args['seed']) ?? Math.floor(Math.random() * 1_000_000);
  const schedules = positiveInt('schedules', args['schedules']);
  const log = (line: string) =>
    console.error(`[chaos ${new Date().toISOString().slice(11, 19)}] ${line}`);
  log(
    `profile ${profile.name}, first seed ${seed} (replay: --seed ${seed}), faults ${profile.kinds.join(',')}` +
      (profile.roles ? ` on ${profile.roles.join(',')}` : ''),
  );
  if (profile.kinds.includes(FaultKind.DOCKER_RESTART)) {
    log(
      'docker-restart restarts dockerd: every container on this machine stops (TROUPE_CHAOS_DOCKER_RESTART=0 leaves it out)',
    );
  }
  const stop = new AbortController();
  // The first SIGINT or SIGTERM finishes the running schedule and stops the cluster; a second
  // quits at once, killing the cluster's processes first so that none outlives the harness.
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (!interrupted) {
      interrupted = true;
      log(`interrupted (${signal}): finishing the running schedule (again to quit at once)`);
      stop.abort(new Error(`interrupted (${signal})`));
      return;
    }
    log(`${signal} again: killing the cluster's processes and quitting`);
    ChaosCluster.killAllClustersNow();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // The last resort, for any other way out (an uncaught error, a stop() that failed): a no-op
  // once the cluster stopped.
  process.on('exit', () => ChaosCluster.killAllClustersNow());
  const minutes = positiveInt('minutes', args['minutes']);
  const timer =
    minutes === undefined
      ? undefined
      : setTimeout(() => stop.abort(new Error(`--minutes ${minutes} reached`)), minutes * 60_000);
  const logDir = process.env['TROUPE_CHAOS_LOG_DIR'];
  const summary = await runChaos({
    profile,
    ...(logDir ? { logDir } : {}),
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
