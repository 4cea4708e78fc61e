import type { KV } from '@nats-io/kv';
import { type NatsConnection } from '@nats-io/transport-node';
import { isWrongLastSequence, createKv } from '@troupe/actors';
import {
  ErrorCode,
  invalidArgument,
  KvBucket,
  kvBucketName,
  parseWith,
  TroupeError,
} from '@troupe/proto';
import { Bm25Retriever } from './bm25-retriever';
import { type ExtractedFunction } from './extract-functions';
import {
  PYTHON_BUILTINS,
  SkillFunctionNameSchema,
  SkillLibraryIdSchema,
  SkillLibraryLimits,
  type SkillProvenance,
  SkillProvenanceSchema,
  type SkillRecord,
  SkillRecordSchema,
  SkillSourceSchema,
  skillSourceHash,
} from './skill-record';
import { type SkillQuery, type SkillRetriever } from './skill-retriever';

/** Which tasks' functions enter the library: every task's, or only those of passed tasks. */
export const AdmissionPolicy = { ALWAYS: 'always', PASSED: 'passed' } as const;
/** One of the {@link AdmissionPolicy} values. */
export type AdmissionPolicy = (typeof AdmissionPolicy)[keyof typeof AdmissionPolicy];

/** What {@link SkillLibrary.admit} did with one candidate. */
export type AdmitOutcome =
  | { name: string; admitted: true; version: number }
  | { name: string; admitted: false; reason: string };

/** Options of {@link SkillLibrary.open}. */
export interface SkillLibraryOptions {
  /** The cluster whose KV bucket `troupe_<cluster>_skill_library` holds the library. */
  cluster: string;
  /** The library within the bucket (`[a-z0-9][a-z0-9_-]{0,63}`), e.g. one per job or suite. */
  libraryId: string;
  /** @default 'always' */
  admission?: AdmissionPolicy;
  /** Ranks skills outside the query's scenario. @default a {@link Bm25Retriever} */
  retriever?: SkillRetriever;
  /** Replicas of the bucket when it is created. @default 1 */
  replicas?: number;
}

/** Default number of skills {@link SkillLibrary.retrieve} picks (dependencies come on top). */
export const DEFAULT_RETRIEVE_LIMIT = 20;

/** Attempts of one admit against concurrent writers of the same name before it gives up. */
const ADMIT_ATTEMPTS = 1_000;

/**
 * A SAGE skill library: Python functions from executed code, versioned by name with provenance,
 * in JetStream KV `troupe_<cluster>_skill_library`, one key per version
 * (`<libraryId>.<name>.<version>`, written once by `create`, updated only to record a drop).
 *
 * Versions of a name are 1, 2, 3, … with no gaps: a writer creates the version after the
 * highest it has seen, and a `create` that loses to a concurrent writer moves on to the next
 * number, so concurrent writers (other processes, other scenarios) never lose a version. A
 * source whose normalised text (see {@link skillSourceHash}) equals a live (not dropped)
 * version of the name is not stored again.
 */
export class SkillLibrary {
  private constructor(
    private readonly kv: KV,
    /** The library's id. */
    readonly libraryId: string,
    /** The admission policy. */
    readonly admission: AdmissionPolicy,
    private readonly retriever: SkillRetriever,
  ) {}

  /** Opens (creating the bucket if needed) one library of the cluster's skill library bucket. */
  static async open(nc: NatsConnection, options: SkillLibraryOptions): Promise<SkillLibrary> {
    const libraryId = parseWith(SkillLibraryIdSchema, options.libraryId, { prefix: 'libraryId' });
    const admission = options.admission ?? AdmissionPolicy.ALWAYS;
    if (!Object.values(AdmissionPolicy).includes(admission)) {
      throw invalidArgument(
        'admission',
        `must be one of ${Object.values(AdmissionPolicy).join(', ')}`,
        admission,
      );
    }
    const name = kvBucketName(options.cluster, KvBucket.SKILL_LIBRARY);
    let kv: KV;
    try {
      kv = await createKv(nc, name, { replicas: options.replicas ?? 1, history: 5 });
    } catch (err) {
      throw new TroupeError(ErrorCode.UNAVAILABLE, `cannot open skill library ${name}`, {
        cause: err,
      });
    }
    return new SkillLibrary(kv, libraryId, admission, options.retriever ?? new Bm25Retriever());
  }

  /**
   * Admits the functions of one task's successful executions, in order; returns one outcome per
   * candidate. A candidate is skipped (with the reason) when the admission policy refuses the
   * task's outcome, when a later candidate of the batch has the same name (the last definition
   * wins), when its name or size breaks a rule, or when its source equals a live version.
   * Throws `INVALID_ARGUMENT` for bad provenance.
   */
  async admit(
    candidates: readonly ExtractedFunction[],
    provenance: SkillProvenance,
  ): Promise<AdmitOutcome[]> {
    const by = parseWith(SkillProvenanceSchema, provenance, { prefix: 'provenance' });
    const lastIndex = new Map<string, number>();
    candidates.forEach((c, i) => lastIndex.set(c.name, i));
    const out: AdmitOutcome[] = [];
    for (const [i, c] of candidates.entries()) {
      const refusal = this.refusal(c, by, lastIndex.get(c.name) !== i);
      out.push(
        refusal !== undefined
          ? { name: c.name, admitted: false, reason: refusal }
          : await this.admitOne(c, by),
      );
    }
    return out;
  }

  /**
   * Skills for a task: per name, the newest live version written in `query.scenario` if there
   * is one, else the newest live version. The scenario's skills come first (ranked by the
   * retriever, all of them kept), then the retriever's pick of the others, `limit` in all
   * ({@link DEFAULT_RETRIEVE_LIMIT}). The skills they call are added (transitively), each placed
   * before the first skill that calls it so that definitions can be checked in order.
   */
  async retrieve(query: SkillQuery & { limit?: number }): Promise<SkillRecord[]> {
    const limit = query.limit ?? DEFAULT_RETRIEVE_LIMIT;
    if (!Number.isInteger(limit) || limit < 0) {
      throw invalidArgument('limit', 'must be a non-negative integer', limit);
    }
    const q: SkillQuery = { scenario: query.scenario, text: query.text };
    const byName = new Map<string, SkillRecord>();
    const records = (await this.list()).filter((r) => !r.dropped);
    // A version of the query's scenario beats any other; then the newer one.
    const rank = (r: SkillRecord): number =>
      (r.scenario === q.scenario ? Number.MAX_SAFE_INTEGER / 2 : 0) + r.version;
    for (const r of records) {
      const cur = byName.get(r.name);
      if (!cur || rank(r) > rank(cur)) byName.set(r.name, r);
    }
    const candidates = [...byName.values()];
    const own = candidates.filter((r) => r.scenario === q.scenario);
    const others = candidates.filter((r) => r.scenario !== q.scenario);
    const ownRanked = await this.retriever.rank(q, own, own.length);
    const ownOrdered = [...ownRanked, ...own.filter((r) => !ownRanked.includes(r))].slice(0, limit);
    const room = limit - ownOrdered.length;
    const picked =
      room > 0 ? [...ownOrdered, ...(await this.retriever.rank(q, others, room))] : ownOrdered;

    const out: SkillRecord[] = [];
    const placed = new Set<string>();
    const place = (r: SkillRecord, visiting: Set<string>): void => {
      if (placed.has(r.name) || visiting.has(r.name)) return;
      visiting.add(r.name);
      for (const dep of r.dependencies) {
        const d = byName.get(dep);
        if (d) place(d, visiting);
      }
      placed.add(r.name);
      out.push(r);
    };
    for (const r of picked) place(r, new Set());
    return out;
  }

  /**
   * Marks one version dropped with the reason and who dropped it (a compare-and-set update, so
   * a concurrent drop is not overwritten). Dropping a dropped version keeps the first drop.
   * Throws `NOT_FOUND` when the version does not exist.
   */
  async drop(name: string, version: number, reason: string, by: SkillProvenance): Promise<void> {
    const n = parseWith(SkillFunctionNameSchema, name, { prefix: 'name' });
    if (!Number.isInteger(version) || version < 1) {
      throw invalidArgument('version', 'must be a positive integer', version);
    }
    if (reason.trim() === '') throw invalidArgument('reason', 'must not be empty');
    const dropper = parseWith(SkillProvenanceSchema, by, { prefix: 'by' });
    const key = this.key(n, version);
    for (let attempt = 0; attempt < ADMIT_ATTEMPTS; attempt++) {
      const e = await this.kv.get(key);
      if (!e || e.operation !== 'PUT' || e.value.length === 0) {
        throw new TroupeError(
          ErrorCode.NOT_FOUND,
          `no version ${version} of skill '${n}' in library ${this.libraryId}`,
        );
      }
      const rec = parseWith(SkillRecordSchema, e.json(), { prefix: `skill ${key}` });
      if (rec.dropped) return;
      const dropped: SkillRecord = {
        ...rec,
        dropped: { reason: reason.slice(0, 2_000), at: new Date().toISOString(), by: dropper },
      };
      try {
        await this.kv.update(key, JSON.stringify(dropped), e.revision);
        return;
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
      }
    }
    throw new TroupeError(ErrorCode.BUSY, `cannot drop ${key}: too many concurrent writers`);
  }

  /** Every version of every skill of the library, dropped ones included, by name and version. */
  async list(): Promise<SkillRecord[]> {
    return this.read(`${this.libraryId}.>`);
  }

  /** The library as JSONL: one version per line (see {@link list}), validated on import. */
  async exportJsonl(): Promise<string> {
    const lines = (await this.list()).map((r) => JSON.stringify(r));
    return lines.length === 0 ? '' : lines.join('\n') + '\n';
  }

  /**
   * Imports JSONL lines as {@link exportJsonl} writes them into this library, keeping their
   * versions, provenance and drops (each line's `libraryId` is replaced by this library's).
   * Every line is validated before anything is written (`line N.<field>: <rule>`). A version
   * that exists with the same source is left alone (re-importing is harmless); one that exists
   * with another source is an `ALREADY_EXISTS` error naming the line. Returns the versions
   * written.
   */
  async importJsonl(text: string): Promise<number> {
    const records: { line: number; record: SkillRecord }[] = [];
    for (const [i, line] of text.split('\n').entries()) {
      if (line.trim() === '') continue;
      let raw: unknown;
      try {
        raw = JSON.parse(line);
      } catch {
        throw new TroupeError(ErrorCode.INVALID_ARGUMENT, `\`line ${i + 1}\`: is not JSON`);
      }
      const record = parseWith(
        SkillRecordSchema,
        raw !== null && typeof raw === 'object' ? { ...raw, libraryId: this.libraryId } : raw,
        { prefix: `line ${i + 1}` },
      );
      if (skillSourceHash(record.source) !== record.sourceHash) {
        throw new TroupeError(
          ErrorCode.INVALID_ARGUMENT,
          `\`line ${i + 1}.sourceHash\`: must be the sha256 of the normalised source`,
        );
      }
      records.push({ line: i + 1, record });
    }
    let written = 0;
    for (const { line, record } of records) {
      const key = this.key(record.name, record.version);
      try {
        await this.kv.create(key, JSON.stringify(record));
        written++;
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
        const existing = await this.get(key);
        if (existing?.sourceHash !== record.sourceHash) {
          throw new TroupeError(
            ErrorCode.ALREADY_EXISTS,
            `\`line ${line}\`: version ${record.version} of skill '${record.name}' already exists with another source`,
            { cause: err },
          );
        }
      }
    }
    return written;
  }

  private refusal(
    c: ExtractedFunction,
    by: SkillProvenance,
    redefinedLater: boolean,
  ): string | undefined {
    if (this.admission === AdmissionPolicy.PASSED && by.outcome !== 'passed') {
      return `task ${by.outcome === 'failed' ? 'failed' : 'outcome is unknown'} and admission is passed`;
    }
    if (redefinedLater) return 'redefined later in the same task';
    const name = SkillFunctionNameSchema.safeParse(c.name);
    if (!name.success) return `name: ${name.error.issues[0]?.message ?? 'invalid'}`;
    const source = SkillSourceSchema.safeParse(c.source);
    if (!source.success) {
      return `source: ${source.error.issues[0]?.message ?? 'invalid'} (got ${c.source.length})`;
    }
    return undefined;
  }

  private async admitOne(c: ExtractedFunction, by: SkillProvenance): Promise<AdmitOutcome> {
    const sourceHash = skillSourceHash(c.source);
    const versions = await this.read(`${this.libraryId}.${c.name}.*`);
    const same = versions.find((v) => !v.dropped && v.sourceHash === sourceHash);
    if (same) return { name: c.name, admitted: false, reason: `same source as v${same.version}` };
    const base = {
      libraryId: this.libraryId,
      name: c.name,
      source: c.source,
      description: (c.docstring ?? '').slice(0, SkillLibraryLimits.DESCRIPTION_CHARS),
      scenario: by.scenario,
      dependencies: c.calls
        .filter((n) => n !== c.name && !PYTHON_BUILTINS.has(n))
        .filter((n) => SkillFunctionNameSchema.safeParse(n).success)
        .slice(0, 200),
      sourceHash,
      provenance: by,
    };
    let version = versions.reduce((m, v) => Math.max(m, v.version), 0) + 1;
    for (let attempt = 0; attempt < ADMIT_ATTEMPTS; attempt++) {
      const record = parseWith(SkillRecordSchema, { ...base, version }, { prefix: 'skill' });
      try {
        await this.kv.create(this.key(c.name, version), JSON.stringify(record));
        return { name: c.name, admitted: true, version };
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
      }
      // A concurrent writer took this version: it may have written the same source.
      const taken = await this.get(this.key(c.name, version));
      if (taken && !taken.dropped && taken.sourceHash === sourceHash) {
        return { name: c.name, admitted: false, reason: `same source as v${version}` };
      }
      version++;
    }
    throw new TroupeError(
      ErrorCode.BUSY,
      `cannot admit skill '${c.name}': too many concurrent writers`,
    );
  }

  private key(name: string, version: number): string {
    return `${this.libraryId}.${name}.${version}`;
  }

  private async get(key: string): Promise<SkillRecord | undefined> {
    const e = await this.kv.get(key);
    if (!e || e.operation !== 'PUT' || e.value.length === 0) return undefined;
    return parseWith(SkillRecordSchema, e.json(), { prefix: `skill ${key}` });
  }

  /** The records under a key filter, by name then version. */
  private async read(filter: string): Promise<SkillRecord[]> {
    const keys: string[] = [];
    for await (const k of await this.kv.keys(filter)) {
      keys.push(k);
      if (keys.length > SkillLibraryLimits.RECORDS) {
        throw new TroupeError(
          ErrorCode.INVALID_ARGUMENT,
          `skill library ${this.libraryId} holds more than ${SkillLibraryLimits.RECORDS} versions`,
        );
      }
    }
    const out: SkillRecord[] = [];
    for (const k of keys) {
      const r = await this.get(k);
      if (r) out.push(r);
    }
    return out.sort((a, b) => a.name.localeCompare(b.name) || a.version - b.version);
  }
}
