import { SeededRandom } from './seeded-random';

/** The kinds of fault the harness injects (docs/reliability.md, Chaos: fault model). */
export const FaultKind = {
  /** `kill -9` of a coordinator, node agent or nats-server, restarted after `holdMs`. */
  KILL: 'kill9',
  /** `SIGSTOP` of a coordinator, node agent or nats-server, `SIGCONT` after `holdMs`. */
  STOP: 'sigstop',
  /** A nats-server stopped (SIGTERM) and started again on its port and store. */
  NATS_RESTART: 'nats-restart',
  /** Every connection of one node agent cut at its TCP proxies for `holdMs`. */
  PARTITION: 'partition',
  /** The Docker daemon restarted (opt-in: it kills every container on the machine). */
  DOCKER_RESTART: 'docker-restart',
} as const;
/** One of {@link FaultKind}. */
export type FaultKind = (typeof FaultKind)[keyof typeof FaultKind];

/** What a fault hits. */
export type FaultTarget =
  | { readonly role: 'coordinator' | 'node-agent' | 'nats'; readonly index: number }
  /** The coordinator holding the leader lease when the fault is injected. */
  | { readonly role: 'leader' }
  | { readonly role: 'docker' };

/** What a `kill9` or `sigstop` may hit (`--faults kill9:leader`). */
export type ProcessRole = 'coordinator' | 'leader' | 'node-agent' | 'nats';

/** Every {@link ProcessRole}. */
export const PROCESS_ROLES: readonly ProcessRole[] = [
  'coordinator',
  'leader',
  'node-agent',
  'nats',
];

/** One fault of a schedule. */
export interface Fault {
  readonly kind: FaultKind;
  readonly target: FaultTarget;
  /** Pause before injecting it (after the previous fault recovered). */
  readonly gapMs: number;
  /** How long it lasts before it heals. */
  readonly holdMs: number;
}

/** A seeded schedule: the job it runs and the faults injected while it runs. */
export interface FaultSchedule {
  readonly seed: number;
  /** Shell tasks of the job. */
  readonly tasks: number;
  readonly faults: readonly Fault[];
}

/** What a schedule may contain (a profile's settings). */
export interface ScheduleShape {
  readonly kinds: readonly FaultKind[];
  readonly faultsPerSchedule: number;
  readonly tasks: number;
  readonly coordinators: number;
  readonly nodeAgents: number;
  readonly natsServers: number;
  /** What `kill9` and `sigstop` pick from. @default coordinator, node-agent, nats */
  readonly roles?: readonly ProcessRole[];
}

/** The schedule of `seed`: the same seed and shape always give the same faults. */
export function makeSchedule(seed: number, shape: ScheduleShape): FaultSchedule {
  const random = new SeededRandom(seed);
  const faults: Fault[] = [];
  for (let i = 0; i < shape.faultsPerSchedule; i++) {
    const kind = random.pick(shape.kinds);
    faults.push({
      kind,
      target: targetOf(kind, random, shape),
      gapMs: random.int(300, 2_000),
      holdMs: kind === FaultKind.NATS_RESTART ? 0 : random.int(300, 3_000),
    });
  }
  return { seed, tasks: shape.tasks, faults };
}

function targetOf(kind: FaultKind, random: SeededRandom, shape: ScheduleShape): FaultTarget {
  switch (kind) {
    case FaultKind.DOCKER_RESTART:
      return { role: 'docker' };
    case FaultKind.NATS_RESTART:
      return { role: 'nats', index: random.int(0, shape.natsServers - 1) };
    case FaultKind.PARTITION:
      return { role: 'node-agent', index: random.int(0, shape.nodeAgents - 1) };
    case FaultKind.KILL:
    case FaultKind.STOP: {
      const role = random.pick(shape.roles ?? (['coordinator', 'node-agent', 'nats'] as const));
      if (role === 'leader') return { role };
      const count =
        role === 'coordinator'
          ? shape.coordinators
          : role === 'node-agent'
            ? shape.nodeAgents
            : shape.natsServers;
      return { role, index: random.int(0, count - 1) };
    }
  }
}

/** `kill9 node-agent#2`, for progress lines and reports. */
export function describeFault(fault: Fault): string {
  const t = fault.target;
  const what =
    t.role === 'docker' ? 'dockerd' : t.role === 'leader' ? 'leader' : `${t.role}#${t.index}`;
  return `${fault.kind} ${what}`;
}
