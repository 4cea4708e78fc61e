import { ErrorCode, TroupeError } from '@troupe/proto';
import { type BankLimits, type BankLimitsOptions, parseBankLimits } from './bank-limits';
import {
  type BankManifestEntry,
  comparePaths,
  serializeManifest,
  sha256Hex,
  treeHashOf,
} from './bank-manifest';
import { type BankViolation, checkBankFiles } from './bank-violation';

/** File content as a caller gives it: bytes, or text (stored as UTF-8). */
export type BankContent = Uint8Array | string;

/** Files as a caller gives them: a map or a plain object from path to content. */
export type BankFilesInput =
  | ReadonlyMap<string, BankContent>
  | Iterable<readonly [string, BankContent]>
  | Readonly<Record<string, BankContent>>;

/** Options of {@link MemoryBank.create}. */
export interface MemoryBankOptions {
  /** The boundaries the files must respect. @default the defaults of `BankLimitsSchema` */
  limits?: BankLimitsOptions | BankLimits;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Bytes of a {@link BankContent}, copied so later changes to the caller's array do not leak in. */
export function contentBytes(content: BankContent): Uint8Array {
  return typeof content === 'string' ? encoder.encode(content) : Uint8Array.from(content);
}

function entriesOf(files: BankFilesInput): Iterable<readonly [string, BankContent]> {
  if (files instanceof Map) return files.entries() as Iterable<readonly [string, BankContent]>;
  if (Symbol.iterator in Object(files)) return files as Iterable<readonly [string, BankContent]>;
  return Object.entries(files as Readonly<Record<string, BankContent>>);
}

/**
 * The `INVALID_ARGUMENT` for a set of violations: the message lists each one (`<field>: <rule>`),
 * `details.violations` carries them as data.
 */
export function bankViolationError(violations: readonly BankViolation[]): TroupeError {
  return new TroupeError(ErrorCode.INVALID_ARGUMENT, violations.map((v) => v.message).join('; '), {
    details: { violations: violations.map((v) => ({ ...v })) },
  });
}

// Package-internal access (not exported from the package index): building a bank from files that
// were already checked, and reading a bank's bytes without a copy.
const INTERNAL = Symbol('MemoryBank.internal');
const FILES = new WeakMap<MemoryBank, ReadonlyMap<string, Uint8Array>>();

/**
 * A bank built from files that were already checked (`checkBankFiles` returned nothing) and are
 * owned by the bank from now on: no copy, no second check. Package-internal.
 */
export function bankFromChecked(files: Map<string, Uint8Array>, limits: BankLimits): MemoryBank {
  return new MemoryBank(INTERNAL, files, limits);
}

/** The bank's own bytes of a file, without a copy: package-internal, never to be modified. */
export function bankBytes(bank: MemoryBank, path: string): Uint8Array | undefined {
  return FILES.get(bank)?.get(path);
}

/**
 * An immutable snapshot of a memory bank: files (relative POSIX paths → bytes) that respect the
 * bank's boundaries, with their canonical manifest and tree hash computed once. Content is copied
 * in and out, so nothing outside can change a bank after it was hashed.
 */
export class MemoryBank {
  /** Canonical manifest: one entry per file, in byte-wise path order. */
  readonly manifest: readonly BankManifestEntry[];
  /** SHA-256 of the canonical manifest (see `treeHashOf`). */
  readonly treeHash: string;
  /** Sum of the file sizes in bytes. */
  readonly totalBytes: number;

  private readonly files: ReadonlyMap<string, Uint8Array>;
  /** The limits this bank was checked against. */
  readonly limits: BankLimits;

  /** Use {@link MemoryBank.create}. */
  constructor(token: symbol, files: ReadonlyMap<string, Uint8Array>, limits: BankLimits) {
    if (token !== INTERNAL) throw new TypeError('use MemoryBank.create');
    this.files = files;
    this.limits = limits;
    FILES.set(this, files);
    const manifest = [...files.keys()].sort(comparePaths).map((path) => {
      const bytes = files.get(path) ?? new Uint8Array();
      return Object.freeze({ path, size: bytes.byteLength, sha256: sha256Hex(bytes) });
    });
    this.manifest = Object.freeze(manifest);
    this.treeHash = treeHashOf(manifest);
    this.totalBytes = manifest.reduce((sum, e) => sum + e.size, 0);
  }

  /**
   * A bank of `files`, checked against the limits.
   * @throws TroupeError `INVALID_ARGUMENT` listing every boundary broken (field and rule), with
   *   `details.violations`
   */
  static create(files: BankFilesInput = {}, options: MemoryBankOptions = {}): MemoryBank {
    const limits = parseBankLimits(options.limits);
    const map = new Map<string, Uint8Array>();
    const violations: BankViolation[] = [];
    for (const [path, content] of entriesOf(files)) {
      if (map.has(path)) {
        violations.push({
          rule: 'path-conflict',
          field: `files[${JSON.stringify(path)}]`,
          path,
          message: `files[${JSON.stringify(path)}]: path is given twice`,
        });
      }
      map.set(path, contentBytes(content));
    }
    violations.push(...checkBankFiles(map, limits));
    if (violations.length > 0) throw bankViolationError(violations);
    return new MemoryBank(INTERNAL, map, limits);
  }

  /** Number of files. */
  get fileCount(): number {
    return this.files.size;
  }

  /** Every path, in canonical order. */
  get paths(): string[] {
    return this.manifest.map((e) => e.path);
  }

  /** The canonical manifest text the tree hash covers. */
  get manifestText(): string {
    return serializeManifest(this.manifest);
  }

  /** Whether the bank has a file at `path`. */
  has(path: string): boolean {
    return this.files.has(path);
  }

  /** A copy of the file's bytes, or `undefined` when there is no such file. */
  read(path: string): Uint8Array | undefined {
    const bytes = this.files.get(path);
    return bytes === undefined ? undefined : Uint8Array.from(bytes);
  }

  /** The file as text, or `undefined` when it is missing or not valid UTF-8. */
  readText(path: string): string | undefined {
    const bytes = this.files.get(path);
    if (bytes === undefined) return undefined;
    try {
      return decoder.decode(bytes);
    } catch {
      return undefined;
    }
  }

  /** A new map of every file (copies), in canonical order. */
  toMap(): Map<string, Uint8Array> {
    return new Map(this.manifest.map((e) => [e.path, this.read(e.path) ?? new Uint8Array()]));
  }

  /** Whether `other` holds exactly the same files (same tree hash). */
  equals(other: MemoryBank): boolean {
    return this.treeHash === other.treeHash;
  }
}
