/** @packageDocumentation @troupe/benchmarks: Benchmark drivers and shipped task suites. */
export { registerBuiltinDrivers, type BuiltinDriverOptions } from './register-builtin-drivers';
export {
  createShellTasksDriver,
  shellSandboxId,
  type ShellRun,
  type ShellTasksDriverOptions,
} from './shell-tasks/shell-tasks-driver';
export {
  DEFAULT_SHELL_IMAGE,
  ShellCommandSchema,
  ShellTaskGeneratorSchema,
  ShellTaskInputSchema,
  ShellTaskListSchema,
  ShellTaskSchema,
  ShellTasksConfigSchema,
  type ShellTask,
  type ShellTaskInput,
  type ShellTasksConfig,
} from './shell-tasks/shell-tasks-spec';
export {
  createEvolveDriver,
  evolveJournalTaskId,
  type EvolveDriverOptions,
} from './evolve/evolve-driver';
