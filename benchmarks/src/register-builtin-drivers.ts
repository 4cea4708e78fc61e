import { type DriverRegistry } from '@troupe/coordinator';
import {
  createDesktopTasksDriver,
  type DesktopTasksDriverOptions,
} from './desktop-tasks/desktop-tasks-driver';
import { createEvolveDriver, type EvolveDriverOptions } from './evolve/evolve-driver';
import {
  createIssueResolutionDriver,
  type IssueResolutionDriverOptions,
} from './issue-resolution/issue-resolution-driver';
import { createRolloutDriver, type RolloutDriverOptions } from './rollout/rollout-driver';
import { createRsiDriver, type RsiDriverOptions } from './rsi/rsi-driver';
import {
  createSkillSequenceDriver,
  type SkillSequenceDriverOptions,
} from './skill-sequence/skill-sequence-driver';
import {
  createShellTasksDriver,
  type ShellTasksDriverOptions,
} from './shell-tasks/shell-tasks-driver';

/** Options of {@link registerBuiltinDrivers}. */
export interface BuiltinDriverOptions {
  /** Options of the `shell-tasks` driver. */
  shellTasks?: ShellTasksDriverOptions;
  /**
   * Options of the `evolve` driver. Without a `journal` each search's journal is kept in
   * JetStream on the host's connection, so a search resumes after a retry, a restart or a
   * crash of its host, on any host.
   */
  evolve?: EvolveDriverOptions;
  /**
   * Options of the `issue-resolution` driver; `agentRunners` is where a model agent runner is
   * registered.
   */
  issueResolution?: IssueResolutionDriverOptions;
  /** Options of the `desktop-tasks` driver (`models` enables its model agent). */
  desktopTasks?: DesktopTasksDriverOptions;
  /** Options of the `rsi` driver (`models`: the registry its roles' models must be in). */
  rsi?: RsiDriverOptions;
  /** Options of the `rollout` driver (`agentHosts: true` enables it). */
  rollout?: RolloutDriverOptions;
  /** Options of the `skill-sequence` driver (`models` enables its model agent). */
  skillSequence?: SkillSequenceDriverOptions;
}

/**
 * Registers the drivers shipped with `@troupe/benchmarks` (`shell-tasks`, `evolve`,
 * `issue-resolution`, `desktop-tasks`, `rsi`, `rollout`, `skill-sequence`) with a coordinator's registry; returns the registry.
 */
export function registerBuiltinDrivers(
  registry: DriverRegistry,
  options: BuiltinDriverOptions = {},
): DriverRegistry {
  registry.register(createShellTasksDriver(options.shellTasks));
  registry.register(createIssueResolutionDriver(options.issueResolution));
  registry.register(createDesktopTasksDriver(options.desktopTasks));
  registry.register(createRsiDriver(options.rsi));
  registry.register(createRolloutDriver(options.rollout));
  registry.register(createSkillSequenceDriver(options.skillSequence));
  return registry.register(createEvolveDriver(options.evolve));
}
