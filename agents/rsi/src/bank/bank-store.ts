import { isWrongLastSequence, createKv, createObjectStore } from '@troupe/actors';
import {
  bankObjectStoreName,
  ErrorCode,
  fromAbortSignal,
  invalidArgument,
  kvBucketName,
  KvBucket,
  type Logger,
  noopLogger,
  parseWith,
  toTroupeError,
  TroupeError,
} from '@troupe/proto';
import type { KV } from '@nats-io/kv';
import type { ObjectStore } from '@nats-io/obj';
import { type NatsConnection } from '@nats-io/transport-node';
import {
  BANK_COMMIT_FORMAT,
  type BankCommit,
  type BankCommitBody,
  BankCommitSchema,
  BankIdSchema,
  commitHashOf,
} from './bank-commit';
import { type BankDiff, diffBanks, type DiffBanksOptions } from './bank-diff';
import { bankIntegrityError, type BankIntegrityDetails } from './bank-integrity';
import { comparePaths, sha256Hex, treeHashOf } from './bank-manifest';
import { exportBankTarball, type ExportBankTarballOptions } from './bank-tarball';
import { bankBytes, MemoryBank } from './memory-bank';

/** Options of {@link BankStore.open}. */
export interface BankStoreOptions {
  /** Cluster whose bucket and object store (`troupe_<cluster>_banks`) to use. */
  cluster: string;
  /** Replicas of the bucket and the object store when they have to be created. @default 1 */
  replicas?: number;
  /** Logger. @default a logger that drops everything */
  logger?: Logger;
  /** Clock for `createdAt`. @default `() => new Date()` */
  now?: () => Date;
}

/** Which version to read: a number, a commit hash, the first version with a tree hash, or the head. */
export type BankRef = { version: number } | { commitHash: string } | { treeHash: string } | 'head';

/** What {@link BankStore.commit} needs. */
export interface BankCommitRequest {
  /** The bank. */
  bankId: string;
  /**
   * The version this one is based on (as loaded), or `null` for the first version. The commit is
   * refused with `ALREADY_EXISTS` when another writer has committed on the same parent first.
   */
  parent: Pick<BankCommit, 'version' | 'commitHash'> | null;
  /** The new content. */
  bank: MemoryBank;
  /** Who commits. */
  author: string;
  /** The producing role, when there is one. */
  role?: string;
  /** Why. @default '' */
  message?: string;
  /** Aborts between steps; blobs written before the abort stay (they are content-addressed). */
  signal?: AbortSignal;
}

/** Options of {@link BankStore.load}. */
export interface BankLoadOptions {
  /** Refuse (integrity error, mismatch `expected`) unless the tree hash is this one. */
  expectTreeHash?: string;
  /** Aborts between reads. */
  signal?: AbortSignal;
}

/** A verified version: its commit record and its content. */
export interface LoadedBank {
  /** The commit record. */
  commit: BankCommit;
  /** The content (its tree hash equals `commit.treeHash`). */
  bank: MemoryBank;
}

/** Name of a blob in the object store: `sha256/<hex>`. */
export function blobName(sha256: string): string {
  return `sha256/${sha256}`;
}

/** KV key of a version's commit record: `<bankId>.v.<version>`. */
export function commitKey(bankId: string, version: number): string {
  return `${bankId}.v.${version}`;
}

const headKey = (bankId: string): string => `${bankId}.head`;
const commitIndexKey = (bankId: string, hash: string): string => `${bankId}.c.${hash}`;
const treeIndexKey = (bankId: string, hash: string): string => `${bankId}.t.${hash}`;

const HASH = /^[0-9a-f]{64}$/;

function digestHex(digest: string): string | undefined {
  if (!digest.startsWith('SHA-256=')) return undefined;
  return Buffer.from(digest.slice('SHA-256='.length), 'base64url').toString('hex');
}

function checkSignal(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw fromAbortSignal(signal);
}

/**
 * Versioned memory banks in JetStream. File blobs live in the object store
 * `troupe_<c>_banks` named `sha256/<hex>`, so identical content is stored once across versions
 * and banks. Commit records live in the KV bucket `troupe_<c>_banks`:
 *
 * - `<bankId>.v.<version>`: the commit record (JSON of {@link BankCommit}), written once with a
 *   KV `create`, which is the compare-and-set that lets exactly one of two writers committing on
 *   the same parent win;
 * - `<bankId>.c.<commitHash>` and `<bankId>.t.<treeHash>`: `{version}` indexes for loading by hash;
 * - `<bankId>.head`: `{version}`, a hint moved forward by revision-checked updates (readers
 *   probe past it, so a writer that died between its record and the hint loses nothing).
 *
 * Every load verifies: the record's schema, its commit hash, its tree hash over its manifest, and
 * each blob's size and SHA-256 — anything changed behind the store's back is reported as an
 * integrity error (`INTERNAL`, reason `INTEGRITY`, `details.mismatch`), never returned.
 */
export class BankStore {
  private constructor(
    /** The KV bucket of commit records. */
    readonly kv: KV,
    /** The object store of blobs. */
    readonly objects: ObjectStore,
    private readonly nc: NatsConnection,
    private readonly log: Logger,
    private readonly now: () => Date,
  ) {}

  /**
   * Opens (creating if needed) the cluster's bank bucket and object store.
   * @throws TroupeError `INVALID_ARGUMENT` for a bad cluster name, `UNAVAILABLE` when JetStream
   *   does not answer
   */
  static async open(nc: NatsConnection, options: BankStoreOptions): Promise<BankStore> {
    const kvName = kvBucketName(options.cluster, KvBucket.BANKS);
    const objName = bankObjectStoreName(options.cluster);
    const replicas = options.replicas ?? 1;
    try {
      const kv = await createKv(nc, kvName, { replicas, history: 1 });
      const objects = await createObjectStore(nc, objName, { replicas });
      const log = (options.logger ?? noopLogger).child({ component: 'bank-store' });
      return new BankStore(kv, objects, nc, log, options.now ?? (() => new Date()));
    } catch (err) {
      throw new TroupeError(ErrorCode.UNAVAILABLE, `cannot open bank store ${kvName}`, {
        cause: err,
      });
    }
  }

  /**
   * Commits `bank` as the next version after `parent`: uploads the blobs the store lacks, then
   * creates the commit record. The parent must exist and verify.
   * @throws TroupeError `ALREADY_EXISTS` (not retryable) when another writer committed on the
   *   same parent first — reload the head and reapply; `NOT_FOUND` when the parent does not exist;
   *   `INVALID_ARGUMENT` for a bad request or a record larger than the server's `max_payload`;
   *   an integrity error when the parent's record was tampered with
   */
  async commit(request: BankCommitRequest): Promise<BankCommit> {
    const bankId = parseWith(BankIdSchema, request.bankId, { prefix: 'bankId' });
    const { bank, signal } = request;
    if (!(bank instanceof MemoryBank)) throw invalidArgument('bank', 'must be a MemoryBank');
    checkSignal(signal);
    let version = 1;
    let parentHash: string | null = null;
    if (request.parent !== null) {
      const parent = await this.getCommit(bankId, { version: request.parent.version });
      if (parent.commitHash !== request.parent.commitHash) {
        throw invalidArgument(
          'parent.commitHash',
          `must be the commit hash of version ${parent.version} (${parent.commitHash})`,
          request.parent.commitHash,
        );
      }
      await this.ensureIndexes(parent);
      version = parent.version + 1;
      parentHash = parent.commitHash;
    }
    const body: BankCommitBody = {
      format: BANK_COMMIT_FORMAT,
      bankId,
      version,
      parent: parentHash,
      treeHash: bank.treeHash,
      manifest: bank.manifest.map((e) => ({ ...e })),
      limits: bank.limits,
      author: request.author,
      ...(request.role === undefined ? {} : { role: request.role }),
      message: request.message ?? '',
      createdAt: this.now().toISOString(),
    };
    const commit = parseWith(BankCommitSchema, { ...body, commitHash: commitHashOf(body) });
    const json = JSON.stringify(commit);
    const maxPayload = this.nc.info?.max_payload;
    if (maxPayload !== undefined && json.length > maxPayload - 1024) {
      throw invalidArgument(
        'bank',
        `commit record is ${json.length} bytes, more than the NATS server's max_payload (${maxPayload}) allows: lower maxFiles or maxPathLength`,
      );
    }
    // Blobs first: a record is only ever visible once everything it names is stored.
    for (const entry of bank.manifest) {
      checkSignal(signal);
      await this.putBlob(entry.sha256, bankBytes(bank, entry.path) ?? new Uint8Array());
    }
    checkSignal(signal);
    try {
      await this.kv.create(commitKey(bankId, version), json);
    } catch (err) {
      if (isWrongLastSequence(err)) {
        throw new TroupeError(
          ErrorCode.ALREADY_EXISTS,
          version === 1
            ? `bank ${bankId} already has a version 1: load its head and commit on it`
            : `bank ${bankId}: version ${version} was committed by another writer on the same parent (version ${version - 1}); reload the head and reapply the change`,
          { cause: err, retryable: false, details: { bankId, version } },
        );
      }
      throw toTroupeError(err);
    }
    await this.ensureIndexes(commit);
    await this.advanceHead(bankId, version);
    this.log.info(
      { bankId, version, treeHash: commit.treeHash, files: bank.fileCount },
      'bank version committed',
    );
    return commit;
  }

  /**
   * The newest version's commit record (verified), or `undefined` when the bank has none.
   */
  async head(bankId: string): Promise<BankCommit | undefined> {
    const latest = await this.headVersion(bankId);
    return latest === 0 ? undefined : this.getCommit(bankId, { version: latest });
  }

  /**
   * A version's commit record, verified (schema, place, commit hash, tree hash over the manifest)
   * but without reading its blobs.
   * @throws TroupeError `NOT_FOUND`, or an integrity error naming the mismatch
   */
  async getCommit(bankId: string, ref: BankRef): Promise<BankCommit> {
    parseWith(BankIdSchema, bankId, { prefix: 'bankId' });
    const version = await this.resolve(bankId, ref);
    const entry = await this.kv.get(commitKey(bankId, version));
    if (entry === null || entry.operation !== 'PUT') {
      throw new TroupeError(ErrorCode.NOT_FOUND, `bank ${bankId} has no version ${version}`, {
        details: { bankId, version },
      });
    }
    const fail = (message: string, details: Omit<BankIntegrityDetails, 'bankId' | 'version'>) =>
      bankIntegrityError(ErrorCode.INTERNAL, `bank ${bankId} version ${version}: ${message}`, {
        bankId,
        version,
        ...details,
      });
    let raw: unknown;
    try {
      raw = JSON.parse(entry.string());
    } catch {
      throw fail('commit record is not JSON', { mismatch: 'record' });
    }
    const parsed = BankCommitSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw fail(
        `commit record is malformed (${issue?.path.join('.') ?? ''}: ${issue?.message ?? ''})`,
        { mismatch: 'record' },
      );
    }
    const commit = parsed.data;
    if (commit.bankId !== bankId || commit.version !== version) {
      throw fail(`record says bank ${commit.bankId} version ${commit.version}`, {
        mismatch: 'commit',
      });
    }
    const { commitHash: recorded, ...body } = commit;
    const computed = commitHashOf(body);
    if (computed !== recorded) {
      throw fail(`commit record hashes to ${computed}, not its recorded commit hash ${recorded}`, {
        mismatch: 'commit',
        expected: recorded,
        actual: computed,
      });
    }
    if (typeof ref === 'object' && 'commitHash' in ref && ref.commitHash !== recorded) {
      throw fail(`commit hash is ${recorded}, not ${ref.commitHash} as its index says`, {
        mismatch: 'commit',
        expected: ref.commitHash,
        actual: recorded,
      });
    }
    for (let i = 1; i < commit.manifest.length; i++) {
      const prev = commit.manifest[i - 1]?.path ?? '';
      if (comparePaths(prev, commit.manifest[i]?.path ?? '') >= 0) {
        throw fail('manifest is not in canonical order or repeats a path', { mismatch: 'record' });
      }
    }
    const tree = treeHashOf(commit.manifest);
    if (tree !== commit.treeHash) {
      throw fail(`manifest hashes to ${tree}, not its recorded tree hash ${commit.treeHash}`, {
        mismatch: 'tree-hash',
        expected: commit.treeHash,
        actual: tree,
      });
    }
    return commit;
  }

  /**
   * A version with its content, fully verified: the commit record (see {@link getCommit}), every
   * blob's size and SHA-256 against the manifest, the bank's boundaries as recorded, and
   * `expectTreeHash` when given.
   * @throws TroupeError `NOT_FOUND`, or an integrity error (`INTERNAL`, reason `INTEGRITY`) whose
   *   message and `details` name the mismatch, the path and both hashes
   */
  async load(bankId: string, ref: BankRef, options: BankLoadOptions = {}): Promise<LoadedBank> {
    const { signal } = options;
    checkSignal(signal);
    const commit = await this.getCommit(bankId, ref);
    const { version } = commit;
    const fail = (message: string, details: Omit<BankIntegrityDetails, 'bankId' | 'version'>) =>
      bankIntegrityError(ErrorCode.INTERNAL, `bank ${bankId} version ${version}: ${message}`, {
        bankId,
        version,
        ...details,
      });
    if (options.expectTreeHash !== undefined && options.expectTreeHash !== commit.treeHash) {
      throw fail(`tree hash is ${commit.treeHash}, expected ${options.expectTreeHash}`, {
        mismatch: 'expected',
        expected: options.expectTreeHash,
        actual: commit.treeHash,
      });
    }
    const files = new Map<string, Uint8Array>();
    for (const entry of commit.manifest) {
      checkSignal(signal);
      let bytes: Uint8Array | null;
      try {
        bytes = await this.objects.getBlob(blobName(entry.sha256));
      } catch (err) {
        if (err instanceof Error && /corrupt|digest/i.test(err.message)) {
          throw bankIntegrityError(
            ErrorCode.INTERNAL,
            `bank ${bankId} version ${version}: blob of ${entry.path} is corrupt in the object store`,
            { bankId, version, mismatch: 'blob', path: entry.path, expected: entry.sha256 },
            err,
          );
        }
        throw toTroupeError(err);
      }
      if (bytes === null) {
        throw fail(`blob ${entry.sha256} of ${entry.path} is missing`, {
          mismatch: 'blob-missing',
          path: entry.path,
          expected: entry.sha256,
        });
      }
      if (bytes.byteLength !== entry.size) {
        throw fail(
          `blob of ${entry.path} is ${bytes.byteLength} bytes, the manifest says ${entry.size}`,
          {
            mismatch: 'blob-size',
            path: entry.path,
            expected: String(entry.size),
            actual: String(bytes.byteLength),
          },
        );
      }
      const actual = sha256Hex(bytes);
      if (actual !== entry.sha256) {
        throw fail(
          `blob of ${entry.path} has sha256 ${actual}, the manifest says ${entry.sha256}`,
          {
            mismatch: 'blob',
            path: entry.path,
            expected: entry.sha256,
            actual,
          },
        );
      }
      files.set(entry.path, bytes);
    }
    let bank: MemoryBank;
    try {
      bank = MemoryBank.create(files, { limits: commit.limits });
    } catch (err) {
      throw bankIntegrityError(
        ErrorCode.INTERNAL,
        `bank ${bankId} version ${version}: stored content breaks its recorded boundaries: ${(err as Error).message}`,
        { bankId, version, mismatch: 'record' },
        err,
      );
    }
    return { commit, bank };
  }

  /** Every version's commit record from 1 to the head, each verified as by {@link getCommit}. */
  async history(bankId: string): Promise<BankCommit[]> {
    const latest = await this.headVersion(bankId);
    const out: BankCommit[] = [];
    for (let v = 1; v <= latest; v++) out.push(await this.getCommit(bankId, { version: v }));
    return out;
  }

  /** The diff between two versions (both loaded and verified). */
  async diff(
    bankId: string,
    from: BankRef,
    to: BankRef,
    options: DiffBanksOptions & { signal?: AbortSignal } = {},
  ): Promise<BankDiff> {
    const a = await this.load(bankId, from, {
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const b = await this.load(bankId, to, {
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return diffBanks(a.bank, b.bank, options);
  }

  /**
   * A version as a tarball (see `exportBankTarball`), its commit record (without the manifest,
   * which the tarball carries as `MANIFEST`) in `bank.json`'s `meta.commit`, and the commit time
   * as every entry's mtime.
   */
  async exportTarball(
    bankId: string,
    ref: BankRef,
    options: Pick<ExportBankTarballOptions, 'gzip'> & BankLoadOptions = {},
  ): Promise<Uint8Array> {
    const { commit, bank } = await this.load(bankId, ref, options);
    const { manifest: _manifest, ...record } = commit;
    return exportBankTarball(bank, {
      meta: { commit: record },
      mtime: new Date(commit.createdAt),
      ...(options.gzip === undefined ? {} : { gzip: options.gzip }),
    });
  }

  private async putBlob(sha256: string, bytes: Uint8Array): Promise<void> {
    const name = blobName(sha256);
    const info = await this.objects.info(name);
    if (info !== null && !info.deleted && info.size === bytes.byteLength) {
      if (digestHex(info.digest) === sha256) return; // stored already: deduplicated
      this.log.warn({ blob: name }, 'bank blob does not match its name: rewriting it');
    }
    await this.objects.putBlob({ name }, bytes);
  }

  private async resolve(bankId: string, ref: BankRef): Promise<number> {
    if (ref === 'head') {
      const latest = await this.headVersion(bankId);
      if (latest === 0) {
        throw new TroupeError(ErrorCode.NOT_FOUND, `bank ${bankId} has no versions`, {
          details: { bankId },
        });
      }
      return latest;
    }
    if ('version' in ref) {
      if (!Number.isSafeInteger(ref.version) || ref.version < 1) {
        throw invalidArgument('ref.version', 'must be an integer ≥ 1', ref.version);
      }
      return ref.version;
    }
    const [field, hash, key] =
      'commitHash' in ref
        ? ['ref.commitHash', ref.commitHash, commitIndexKey(bankId, ref.commitHash)]
        : ['ref.treeHash', ref.treeHash, treeIndexKey(bankId, ref.treeHash)];
    if (!HASH.test(hash)) throw invalidArgument(field, 'must be 64 lowercase hex digits', hash);
    const entry = await this.kv.get(key);
    const version = entry?.operation === 'PUT' ? readVersion(entry.string()) : undefined;
    if (version === undefined) {
      throw new TroupeError(
        ErrorCode.NOT_FOUND,
        `bank ${bankId} has no version with ${field.slice(4)} ${hash}`,
        {
          details: { bankId, [field.slice(4)]: hash },
        },
      );
    }
    return version;
  }

  /** The newest version number (0 when none): the head hint, then a probe past it. */
  private async headVersion(bankId: string): Promise<number> {
    parseWith(BankIdSchema, bankId, { prefix: 'bankId' });
    const hint = await this.kv.get(headKey(bankId));
    let latest = hint?.operation === 'PUT' ? (readVersion(hint.string()) ?? 0) : 0;
    for (;;) {
      const next = await this.kv.get(commitKey(bankId, latest + 1));
      if (next === null || next.operation !== 'PUT') return latest;
      latest += 1;
    }
  }

  private async ensureIndexes(commit: BankCommit): Promise<void> {
    const value = JSON.stringify({ version: commit.version });
    for (const key of [
      commitIndexKey(commit.bankId, commit.commitHash),
      treeIndexKey(commit.bankId, commit.treeHash),
    ]) {
      try {
        await this.kv.create(key, value);
      } catch (err) {
        // Present already: the commit index was written before, the tree index names an earlier
        // version with the same content (the first one is kept).
        if (!isWrongLastSequence(err)) throw toTroupeError(err);
      }
    }
  }

  /** Moves the head hint forward to `version` (never back) with revision-checked writes. */
  private async advanceHead(bankId: string, version: number): Promise<void> {
    const value = JSON.stringify({ version });
    for (let attempt = 0; attempt < 10; attempt++) {
      const current = await this.kv.get(headKey(bankId));
      try {
        if (current === null || current.operation !== 'PUT') {
          await this.kv.create(headKey(bankId), value);
          return;
        }
        if ((readVersion(current.string()) ?? 0) >= version) return;
        await this.kv.update(headKey(bankId), value, current.revision);
        return;
      } catch (err) {
        if (!isWrongLastSequence(err)) throw toTroupeError(err);
      }
    }
    // Only a hint: readers probe past it, so losing this race ten times loses nothing.
    this.log.warn({ bankId, version }, 'bank head hint not advanced');
  }
}

function readVersion(text: string): number | undefined {
  try {
    const v = (JSON.parse(text) as { version?: unknown }).version;
    return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1 ? v : undefined;
  } catch {
    return undefined;
  }
}
