import { isWrongLastSequence } from '@troupe/actors';
import { ErrorCode, ErrorReason, isTroupeError, toTroupeError, TroupeError } from '@troupe/proto';
import type { KV } from '@nats-io/kv';
import { type BankCommit, canonicalJson } from '../bank/bank-commit';
import type { BankStore } from '../bank/bank-store';

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

/** A bank version as phase records name it. */
export interface BankVersion {
  version: number;
  commitHash: string;
  treeHash: string;
}

/** The {@link BankVersion} of a commit record. */
export function versionOf(c: BankCommit): BankVersion {
  return { version: c.version, commitHash: c.commitHash, treeHash: c.treeHash };
}

/** A phase's refusal to go on: `INTERNAL`, reason `PROTOCOL`, never retried. */
export function protocolError(message: string, details: Record<string, unknown> = {}): TroupeError {
  return new TroupeError(ErrorCode.INTERNAL, message, {
    reason: ErrorReason.PROTOCOL,
    retryable: false,
    details,
  });
}

/**
 * The commit message that carries a boundary's record: `<prefix><JSON>`. A phase commits its
 * output bank with it and writes the record afterwards, so a crash in between loses nothing
 * ({@link adoptCommitted} reads it back).
 */
export function recordMessage(prefix: string, record: unknown): string {
  return `${prefix}${JSON.stringify(record)}`;
}

/**
 * The output a run committed on `current` and died before recording: the version right after
 * `current`, when its message carries a record (`prefix` + JSON) that `isOurs` accepts.
 * @returns the record and the commit, or undefined when there is no next version
 * @throws a `PROTOCOL` error naming `what` when the next version is someone else's output
 */
export async function adoptCommitted<T>(
  banks: BankStore,
  bankId: string,
  current: BankVersion,
  prefix: string,
  what: string,
  isOurs: (record: Partial<T>) => boolean,
): Promise<{ record: T; commit: BankCommit } | undefined> {
  let next: BankCommit;
  try {
    next = await banks.getCommit(bankId, { version: current.version + 1 });
  } catch (err) {
    if (isTroupeError(err) && err.code === ErrorCode.NOT_FOUND) return undefined;
    throw err;
  }
  let record: T | undefined;
  if (next.parent === current.commitHash && next.message.startsWith(prefix)) {
    try {
      record = JSON.parse(next.message.slice(prefix.length)) as T;
    } catch {
      record = undefined;
    }
  }
  if (record === undefined || record === null || !isOurs(record)) {
    throw protocolError(
      `${what}: bank ${bankId} already has version ${next.version} after ${current.version}, which is not its output`,
      { bankId, version: next.version },
    );
  }
  return { record, commit: next };
}
