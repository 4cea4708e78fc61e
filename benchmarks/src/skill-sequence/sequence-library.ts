import type { NatsConnection } from '@nats-io/transport-node';
import type {
  AdmitOutcome,
  ExtractedFunction,
  SkillLibrary,
  SkillProvenance,
  SkillRecord,
} from '@troupe/agents';

// What the `skill-sequence` driver needs of a skill library: the calls of `SkillLibrary` from
// `@troupe/agents` it makes, so a test or another store can stand in for it.

/** A function found in executed code. */
export type SequenceFunction = ExtractedFunction;
/** Where a skill version came from. */
export type SequenceProvenance = SkillProvenance;
/** One stored skill version. */
export type SequenceSkill = SkillRecord;
/** What `admit` did with one candidate. */
export type SequenceAdmitOutcome = AdmitOutcome;
/**
 * The library calls of one scenario run. `retrieve` returns each skill after the retrieved
 * skills it calls, so checking them in order defines dependencies first.
 */
export type SequenceLibrary = Pick<SkillLibrary, 'admit' | 'retrieve' | 'drop'>;

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
