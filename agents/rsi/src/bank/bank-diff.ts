import { createTwoFilesPatch, FILE_HEADERS_ONLY } from 'diff';
import { comparePaths } from './bank-manifest';
import { isUtf8 } from './bank-violation';
import { bankBytes, type MemoryBank } from './memory-bank';

/** How a file differs between two banks. */
export const BankFileStatus = {
  ADDED: 'added',
  REMOVED: 'removed',
  MODIFIED: 'modified',
} as const;

/** One of the {@link BankFileStatus} values. */
export type BankFileStatus = (typeof BankFileStatus)[keyof typeof BankFileStatus];

/** One file that differs between two banks. */
export interface BankFileDiff {
  /** The file's path. */
  path: string;
  /** Added, removed or modified. */
  status: BankFileStatus;
  /** SHA-256 in the old bank (absent when added). */
  oldSha256?: string;
  /** SHA-256 in the new bank (absent when removed). */
  newSha256?: string;
  /** Size in the old bank (absent when added). */
  oldSize?: number;
  /** Size in the new bank (absent when removed). */
  newSize?: number;
  /** Whether either side is not text — not UTF-8, or holding a NUL byte (then there is no `patch`). */
  binary: boolean;
  /**
   * Unified diff (`--- a/<path>` / `+++ b/<path>`, `/dev/null` for an added or removed file) when
   * both sides are text; absent for binary files and for text too different to diff within
   * `maxEditLength` (then `patchOmitted` is set).
   */
  patch?: string;
  /** Set when a text diff was skipped because it exceeded `maxEditLength`. */
  patchOmitted?: true;
}

/** The difference between two banks. */
export interface BankDiff {
  /** Tree hash of the old bank. */
  fromTreeHash: string;
  /** Tree hash of the new bank. */
  toTreeHash: string;
  /** Paths only in the new bank, in canonical order. */
  added: string[];
  /** Paths only in the old bank, in canonical order. */
  removed: string[];
  /** Paths in both with different content, in canonical order. */
  modified: string[];
  /** Every differing file, in canonical path order. */
  files: BankFileDiff[];
}

/** Options of {@link diffBanks}. */
export interface DiffBanksOptions {
  /** Lines of context around each hunk. @default 3 */
  context?: number;
  /**
   * Largest edit distance (lines) a text diff may take before it is given up and marked
   * `patchOmitted`: bounds the time spent on two unrelated large files.
   * @default 10000
   */
  maxEditLength?: number;
}

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Text for diffing: valid UTF-8 without a NUL byte (git's heuristic for binary content). */
function isText(bytes: Uint8Array): boolean {
  return !bytes.includes(0) && isUtf8(bytes);
}

function unifiedPatch(
  path: string,
  oldText: string | undefined,
  newText: string | undefined,
  options: Required<DiffBanksOptions>,
): string | undefined {
  return createTwoFilesPatch(
    oldText === undefined ? '/dev/null' : `a/${path}`,
    newText === undefined ? '/dev/null' : `b/${path}`,
    oldText ?? '',
    newText ?? '',
    undefined,
    undefined,
    {
      context: options.context,
      maxEditLength: options.maxEditLength,
      headerOptions: FILE_HEADERS_ONLY,
    },
  );
}

/**
 * What changed from `from` to `to`: added, removed and modified paths with their old and new
 * hashes and sizes, and for text files a unified diff (computed with the `diff` package, the
 * Myers algorithm git uses). Files with identical content are not listed.
 */
export function diffBanks(
  from: MemoryBank,
  to: MemoryBank,
  options: DiffBanksOptions = {},
): BankDiff {
  const opts = { context: options.context ?? 3, maxEditLength: options.maxEditLength ?? 10_000 };
  const oldEntries = new Map(from.manifest.map((e) => [e.path, e]));
  const newEntries = new Map(to.manifest.map((e) => [e.path, e]));
  const paths = [...new Set([...oldEntries.keys(), ...newEntries.keys()])].sort(comparePaths);
  const result: BankDiff = {
    fromTreeHash: from.treeHash,
    toTreeHash: to.treeHash,
    added: [],
    removed: [],
    modified: [],
    files: [],
  };
  for (const path of paths) {
    const o = oldEntries.get(path);
    const n = newEntries.get(path);
    if (o !== undefined && n !== undefined && o.sha256 === n.sha256) continue;
    const status: BankFileStatus =
      o === undefined ? 'added' : n === undefined ? 'removed' : 'modified';
    result[status].push(path);
    const oldBytes = o === undefined ? undefined : bankBytes(from, path);
    const newBytes = n === undefined ? undefined : bankBytes(to, path);
    const binary =
      (oldBytes !== undefined && !isText(oldBytes)) ||
      (newBytes !== undefined && !isText(newBytes));
    const file: BankFileDiff = {
      path,
      status,
      ...(o === undefined ? {} : { oldSha256: o.sha256, oldSize: o.size }),
      ...(n === undefined ? {} : { newSha256: n.sha256, newSize: n.size }),
      binary,
    };
    if (!binary) {
      const patch = unifiedPatch(
        path,
        oldBytes === undefined ? undefined : decoder.decode(oldBytes),
        newBytes === undefined ? undefined : decoder.decode(newBytes),
        opts,
      );
      if (patch === undefined) file.patchOmitted = true;
      else file.patch = patch;
    }
    result.files.push(file);
  }
  return result;
}

/**
 * The whole diff as one text: each file's unified diff, or a `Binary files … differ` line (as
 * git prints it) for binary files and omitted patches.
 */
export function formatBankDiff(diff: BankDiff): string {
  return diff.files
    .map((f) => {
      if (f.patch !== undefined) return f.patch;
      const a = f.status === 'added' ? '/dev/null' : `a/${f.path}`;
      const b = f.status === 'removed' ? '/dev/null' : `b/${f.path}`;
      const what = f.binary ? 'Binary files' : 'Files (diff too large)';
      return `${what} ${a} and ${b} differ\n`;
    })
    .join('');
}
