import { invalidArgument, TroupeError } from '@troupe/proto';
import { type AnyJobDriver } from './job-driver';
import { JOB_NAME_PATTERN, type JobSpec, parseJobSpec } from './job-spec';
import { isTaskFileRef, tasksOfTaskFile } from './task-file';

/**
 * The job kinds a coordinator can run, by name. Drivers are injected (the coordinator never
 * imports `@troupe/benchmarks`): `registerBuiltinDrivers(registry)` from the benchmarks package
 * registers the shipped ones.
 */
export class DriverRegistry {
  private readonly drivers = new Map<string, AnyJobDriver>();

  /** Adds a driver; a second driver with the same name is refused. */
  register(driver: AnyJobDriver): this {
    if (!JOB_NAME_PATTERN.test(driver.name)) {
      throw invalidArgument('driver.name', 'must match [a-z0-9][a-z0-9._-]{0,63}', driver.name);
    }
    if (this.drivers.has(driver.name)) {
      throw new TroupeError(
        'ALREADY_EXISTS',
        `a driver named '${driver.name}' is already registered`,
      );
    }
    this.drivers.set(driver.name, driver);
    return this;
  }

  /** Registered names, sorted. */
  names(): string[] {
    return [...this.drivers.keys()].sort();
  }

  /** The driver of `kind`, or `INVALID_ARGUMENT` (field `spec.kind`) listing the known kinds. */
  get(kind: string): AnyJobDriver {
    const driver = this.drivers.get(kind);
    if (!driver) {
      const known = this.names();
      const rule =
        known.length === 0
          ? 'unknown job kind: this coordinator has no drivers registered'
          : `unknown job kind (known: ${known.join(', ')})`;
      const err = invalidArgument('spec.kind', rule, kind);
      (err.details as Record<string, unknown>)['knownKinds'] = known;
      throw err;
    }
    return driver;
  }

  /** Whether a driver named `kind` is registered. */
  has(kind: string): boolean {
    return this.drivers.has(kind);
  }

  /**
   * Validates a parsed spec document completely: the driver-agnostic fields, the kind, the tasks
   * of a task file (read by `readTaskFile`, every line checked), then the driver's own fields
   * (which may read files, asynchronously). Rejects with `INVALID_ARGUMENT` naming the field and
   * the rule.
   */
  async validate(raw: unknown, options: ValidateSpecOptions = {}): Promise<JobSpec> {
    const spec = parseJobSpec(raw);
    const driver = this.get(spec.kind);
    if (isTaskFileRef(spec.tasks)) {
      if (!options.readTaskFile) {
        throw new TroupeError('UNAVAILABLE', 'task files cannot be read here (no job store)');
      }
      await tasksOfTaskFile(spec, driver, options.readTaskFile, {
        ...(options.signal ? { signal: options.signal } : {}),
      });
    }
    await driver.validate(spec);
    return spec;
  }
}

/** Options of {@link DriverRegistry.validate}. */
export interface ValidateSpecOptions {
  /** Reads an uploaded task file (undefined when none is stored under `upload`). */
  readTaskFile?: (upload: string) => Promise<Uint8Array | undefined>;
  /** Stops reading a task file. */
  signal?: AbortSignal;
}
