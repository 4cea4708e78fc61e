import { type ErrorCode, ErrorReason, hasReason, TroupeError } from '@troupe/proto';

/** What did not match in an integrity failure. */
export const BankMismatch = {
  /** A blob's bytes do not hash to the SHA-256 the manifest records for its file. */
  BLOB: 'blob',
  /** A blob's size differs from the manifest's. */
  BLOB_SIZE: 'blob-size',
  /** A blob the manifest names is missing. */
  BLOB_MISSING: 'blob-missing',
  /** The manifest does not hash to the recorded tree hash. */
  TREE_HASH: 'tree-hash',
  /** A commit record does not hash to its recorded commit hash, or is not where it should be. */
  COMMIT: 'commit',
  /** A commit record is malformed. */
  RECORD: 'record',
  /** The tree hash differs from the one the caller expected (a frozen bank changed). */
  EXPECTED: 'expected',
  /** A tarball's manifest disagrees with its files. */
  MANIFEST: 'manifest',
} as const;

/** One of the {@link BankMismatch} values. */
export type BankMismatch = (typeof BankMismatch)[keyof typeof BankMismatch];

/** Facts of an integrity failure, carried in `details`. */
export interface BankIntegrityDetails {
  /** What did not match. */
  mismatch: BankMismatch;
  /** The bank, when known. */
  bankId?: string;
  /** The version, when known. */
  version?: number;
  /** The file concerned, when there is one. */
  path?: string;
  /** The recorded (expected) value. */
  expected?: string;
  /** The value found. */
  actual?: string;
}

/**
 * An integrity failure: stored or imported bank data does not match the hashes recorded for it.
 * `INTERNAL` for data from the bank store, `INVALID_ARGUMENT` for an imported tarball; both carry
 * the `INTEGRITY` reason (test with {@link isBankIntegrityError}) and are never retryable.
 */
export function bankIntegrityError(
  code: ErrorCode,
  message: string,
  details: BankIntegrityDetails,
  cause?: unknown,
): TroupeError {
  return new TroupeError(code, message, {
    reason: ErrorReason.INTEGRITY,
    retryable: false,
    details: { ...details },
    ...(cause === undefined ? {} : { cause }),
  });
}

/** Whether `err` (or anything in its cause chain) is a bank integrity failure. */
export function isBankIntegrityError(err: unknown): boolean {
  return hasReason(err, ErrorReason.INTEGRITY);
}
