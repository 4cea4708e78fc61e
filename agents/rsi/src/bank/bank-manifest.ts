import { createHash } from 'node:crypto';
import { z } from 'zod';

/** First line of every canonical manifest: names the format and its version. */
export const BANK_MANIFEST_HEADER = 'troupe-memory-bank-manifest/1';

/** One file of a bank as its manifest records it. */
export interface BankManifestEntry {
  /** Relative POSIX path (see `bankPathRule`). */
  path: string;
  /** Size in bytes. */
  size: number;
  /** SHA-256 of the content, 64 lowercase hex digits. */
  sha256: string;
}

/** A manifest entry as it arrives from outside (a stored record, a tarball). */
export const BankManifestEntrySchema = z.strictObject({
  path: z.string().min(1),
  size: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex digits'),
});

/** SHA-256 of bytes (or of a string's UTF-8 encoding) as 64 lowercase hex digits. */
export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Byte-wise order of the UTF-8 encodings: the same on every platform and in every locale. */
export function comparePaths(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** The entries sorted into canonical (byte-wise path) order; the input is left as it is. */
export function sortManifest(entries: readonly BankManifestEntry[]): BankManifestEntry[] {
  return [...entries].sort((a, b) => comparePaths(a.path, b.path));
}

/**
 * The canonical serialisation of a manifest — the exact bytes the tree hash covers:
 *
 * ```
 * troupe-memory-bank-manifest/1\n
 * <sha256> <size> <path>\n      one line per file, in byte-wise order of path
 * ```
 *
 * `<size>` is decimal without leading zeros. Paths cannot contain a newline or any control
 * character, so every line parses back unambiguously. Entries are sorted here, so the order they
 * were given in never matters.
 */
export function serializeManifest(entries: readonly BankManifestEntry[]): string {
  let out = `${BANK_MANIFEST_HEADER}\n`;
  for (const e of sortManifest(entries)) out += `${e.sha256} ${e.size} ${e.path}\n`;
  return out;
}

/**
 * The tree hash of a bank: SHA-256 of {@link serializeManifest} (UTF-8), 64 lowercase hex digits.
 * Identical content gives the identical hash whatever order the files were added in; any change
 * of a path, a size or a byte of content changes it.
 */
export function treeHashOf(entries: readonly BankManifestEntry[]): string {
  return sha256Hex(serializeManifest(entries));
}

const LINE = /^([0-9a-f]{64}) (0|[1-9][0-9]*) (.+)$/;

/**
 * Parses a canonical manifest back into entries. Strict: the header, the line format, the order
 * and the uniqueness of paths must be exactly as {@link serializeManifest} writes them, so
 * `serializeManifest(parseManifest(text)) === text` for any text it accepts.
 * @throws Error naming the line and the rule broken
 */
export function parseManifest(text: string): BankManifestEntry[] {
  if (!text.endsWith('\n')) throw new Error('manifest: must end with a newline');
  const lines = text.slice(0, -1).split('\n');
  if (lines[0] !== BANK_MANIFEST_HEADER) {
    throw new Error(`manifest line 1: must be ${JSON.stringify(BANK_MANIFEST_HEADER)}`);
  }
  const entries: BankManifestEntry[] = [];
  for (let i = 1; i < lines.length; i++) {
    const m = LINE.exec(lines[i] ?? '');
    if (!m) throw new Error(`manifest line ${i + 1}: must be "<sha256> <size> <path>"`);
    const entry = { sha256: m[1] ?? '', size: Number(m[2]), path: m[3] ?? '' };
    if (!Number.isSafeInteger(entry.size)) {
      throw new Error(`manifest line ${i + 1}: size must be a safe integer`);
    }
    const prev = entries[entries.length - 1];
    if (prev !== undefined && comparePaths(prev.path, entry.path) >= 0) {
      throw new Error(`manifest line ${i + 1}: paths must be unique and in byte-wise order`);
    }
    entries.push(entry);
  }
  return entries;
}
