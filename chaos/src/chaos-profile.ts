import { FaultKind, type ScheduleShape } from './fault-schedule';

/** A named set of schedule settings (`--profile`). */
export interface ChaosProfile extends ScheduleShape {
  readonly name: 'short' | 'long';
  /** Schedules run unless `--schedules` says otherwise. */
  readonly schedules: number;
}

const BASE = { coordinators: 2, nodeAgents: 3, natsServers: 3 } as const;
const KINDS = [FaultKind.KILL, FaultKind.STOP, FaultKind.NATS_RESTART, FaultKind.PARTITION];

/**
 * The profiles. `short` (CI): two schedules of two faults, never a Docker daemon restart (it
 * stops every container on the machine). `long`: 50 schedules of three faults, of every kind;
 * without `dockerRestart` (env TROUPE_CHAOS_DOCKER_RESTART=0) of every kind but that one.
 */
export function chaosProfile(name: string, dockerRestart: boolean): ChaosProfile {
  switch (name) {
    case 'short':
      return { ...BASE, name, schedules: 2, faultsPerSchedule: 2, tasks: 18, kinds: KINDS };
    case 'long':
      return {
        ...BASE,
        name,
        schedules: 50,
        faultsPerSchedule: 3,
        tasks: 18,
        kinds: dockerRestart ? [...KINDS, FaultKind.DOCKER_RESTART] : KINDS,
      };
    default:
      throw new RangeError(`--profile: must be short or long, got ${name}`);
  }
}
