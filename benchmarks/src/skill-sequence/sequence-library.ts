import type { NatsConnection } from '@nats-io/transport-node';

/**
 * What the `skill-sequence` driver needs of a skill library (issue 19's contract §3): the subset
 * of `SkillLibrary` from `@troupe/agents` it calls, so the driver's logic does not depend on how
 * the library stores its versions.
 */

/** A function found in executed code. */
export interface SequenceFunction {
  name: string;
  source: string;
  docstring?: string;
  calls: string[];
}

/** Where a skill version came from. */
export interface SequenceProvenance {
  jobId: string;
  scenario: string;
  taskId: string;
  step: number;
  outcome: 'passed' | 'failed' | 'unknown';
  at: string;
}

/** One stored skill version. */
export interface SequenceSkill {
  name: string;
  version: number;
  source: string;
  description: string;
  scenario: string;
  dependencies: string[];
  provenance: SequenceProvenance;
}

/** What `admit` did with one candidate. */
export type SequenceAdmitOutcome =
  | { name: string; admitted: true; version: number }
  | { name: string; admitted: false; reason: string };

/** The library calls of one scenario run. */
export interface SequenceLibrary {
  admit(
    candidates: SequenceFunction[],
    provenance: SequenceProvenance,
  ): Promise<SequenceAdmitOutcome[]>;
  retrieve(query: { scenario: string; text: string; limit?: number }): Promise<SequenceSkill[]>;
  drop(name: string, version: number, reason: string, by: SequenceProvenance): Promise<void>;
}

/** Opens the library a job uses. */
export type OpenSequenceLibrary = (o: {
  nats: {
    connection: NatsConnection;
    cluster: string;
    replicas?: number;
  };
  libraryId: string;
  admission: 'always' | 'passed';
}) => Promise<SequenceLibrary>;

/** Top-level functions of a piece of code (a real Python parser). */
export type ExtractSequenceFunctions = (code: string) => SequenceFunction[];
