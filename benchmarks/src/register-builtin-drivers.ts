import { type DriverRegistry } from '@troupe/coordinator';
import { createEvolveDriver, type EvolveDriverOptions } from './evolve/evolve-driver';
import {
  createShellTasksDriver,
  type ShellTasksDriverOptions,
} from './shell-tasks/shell-tasks-driver';

/** Options of {@link registerBuiltinDrivers}. */
export interface BuiltinDriverOptions {
  /** Options of the `shell-tasks` driver. */
  shellTasks?: ShellTasksDriverOptions;
  /**
   * Options of the `evolve` driver. Without a `journal` the search journal is kept in memory,
   * so a search resumes after a task retry in the same process but not after a restart.
   */
  evolve?: EvolveDriverOptions;
}

/**
 * Registers the drivers shipped with `@troupe/benchmarks` (`shell-tasks`, `evolve`) with a
 * coordinator's registry; returns the registry.
 */
export function registerBuiltinDrivers(
  registry: DriverRegistry,
  options: BuiltinDriverOptions = {},
): DriverRegistry {
  registry.register(createShellTasksDriver(options.shellTasks));
  return registry.register(createEvolveDriver(options.evolve));
}
