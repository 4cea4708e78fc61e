import type fc from 'fast-check';

/**
 * What one case answered: `undefined` when the answer is right (success, or the documented error
 * naming the field), else why it is wrong. `syncMs` is the longest synchronous stretch the case
 * measured itself (an untrusted parse on this thread), when it has one.
 */
export interface CaseVerdict {
  wrong?: string;
  syncMs?: number;
}

/** A running fuzz target: its servers are up, cases can be run against them. */
export interface FuzzTargetInstance<T> {
  /** Generates the target's inputs. */
  readonly arbitrary: fc.Arbitrary<T>;
  /** Runs one case against the real parser or server and judges the answer. */
  run(input: T): Promise<CaseVerdict>;
  /**
   * Sends a known-valid request: `undefined` when it succeeds, else what went wrong (the target
   * stopped serving after a case).
   */
  checkValid(): Promise<string | undefined>;
  /** Stops what {@link FuzzTarget.start} started. */
  stop(): Promise<void>;
}

/** A fuzz target: one untrusted input boundary of Troupe. */
export interface FuzzTarget<T = unknown> {
  /** Short name, used by `--target`. */
  readonly name: string;
  /** One line saying what is fuzzed. */
  readonly description: string;
  /** Brings up the real parser's or server's surroundings. */
  start(): Promise<FuzzTargetInstance<T>>;
}
