import { isWrongLastSequence } from '@troupe/actors';
import { ErrorCode, toTroupeError, TroupeError } from '@troupe/proto';
import type { KV } from '@nats-io/kv';
import { canonicalJson } from '../bank/bank-commit';

/** The phases of a study, as record key segments. */
export type StudyPhase = 'phase1' | 'phase2' | 'phase3';

/**
 * Write-once records of a study's phase boundaries, kept in the bank bucket next to the study's
 * bank (`<bankId>.study.<phase>.<name>`; bank keys use `.v.`, `.c.`, `.t.` and `.head`, so the
 * two never meet). A record is created once; creating it again with the same content is a no-op
 * (a replay after a crash), with other content a refusal — a phase's accepted output is never
 * silently overwritten.
 */
export class StudyRecords {
  constructor(
    private readonly kv: KV,
    /** The study's bank id (also the study's id). */
    readonly bankId: string,
  ) {}

  /** The record's key: `<bankId>.study.<phase>.<name>`. */
  key(phase: StudyPhase, name: string): string {
    return `${this.bankId}.study.${phase}.${name}`;
  }

  /** The record, or undefined when none was written. */
  async get<T>(phase: StudyPhase, name: string): Promise<T | undefined> {
    try {
      const entry = await this.kv.get(this.key(phase, name));
      if (entry === null || entry.operation !== 'PUT') return undefined;
      return JSON.parse(entry.string()) as T;
    } catch (err) {
      throw toTroupeError(err);
    }
  }

  /**
   * Writes the record once.
   * @throws TroupeError `ALREADY_EXISTS` when a record with other content is there
   */
  async put(phase: StudyPhase, name: string, record: unknown): Promise<void> {
    const key = this.key(phase, name);
    const json = canonicalJson(record);
    try {
      await this.kv.create(key, json);
    } catch (err) {
      if (!isWrongLastSequence(err)) throw toTroupeError(err);
      const existing = await this.get<unknown>(phase, name);
      if (existing !== undefined && canonicalJson(existing) === json) return;
      throw new TroupeError(
        ErrorCode.ALREADY_EXISTS,
        `${key} already holds a different record; an accepted phase output is never overwritten`,
        { retryable: false, details: { key } },
      );
    }
  }
}
