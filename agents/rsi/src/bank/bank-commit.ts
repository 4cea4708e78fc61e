import { z } from 'zod';
import { BankLimitsSchema } from './bank-limits';
import { BankManifestEntrySchema, sha256Hex } from './bank-manifest';

/** Format name of a commit record. */
export const BANK_COMMIT_FORMAT = 'troupe-memory-bank-commit/1';

/** A bank id: 1 to 128 of `[A-Za-z0-9_-]` (it is a token of the KV keys). */
export const BankIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,128}$/, 'must match [A-Za-z0-9_-]{1,128}');

const HashSchema = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex digits');

/** The hashed part of a commit record: everything but the commit hash itself. */
export const BankCommitBodySchema = z.strictObject({
  format: z.literal(BANK_COMMIT_FORMAT),
  bankId: BankIdSchema,
  /** 1 for the first commit, the parent's version + 1 after. */
  version: z.number().int().min(1),
  /** Commit hash of the parent version; `null` for version 1. */
  parent: HashSchema.nullable(),
  /** Tree hash of the manifest. */
  treeHash: HashSchema,
  /** Canonical manifest (byte-wise path order). */
  manifest: z.array(BankManifestEntrySchema),
  /** The boundaries the bank was checked against when committed (used again on load). */
  limits: BankLimitsSchema,
  /** Who committed (an actor address, a user, a driver). */
  author: z.string().min(1).max(256),
  /** The role that produced this version (`actor`, `curriculum`, `driver`, …), when given. */
  role: z.string().min(1).max(64).optional(),
  /** Why (a lesson's summary, "phase 2 task t3 accepted", …). */
  message: z.string().max(4096),
  /** When the commit was made, ISO 8601. */
  createdAt: z.iso.datetime(),
});

/** The hashed part of a commit record. */
export type BankCommitBody = z.output<typeof BankCommitBodySchema>;

/** A stored commit record: its body plus the commit hash over it. */
export const BankCommitSchema = BankCommitBodySchema.extend({
  /** SHA-256 of the canonical JSON of the body (see {@link commitHashOf}). */
  commitHash: HashSchema,
});

/** A stored commit record. */
export type BankCommit = z.output<typeof BankCommitSchema>;

/**
 * JSON with object keys sorted (byte-wise, recursively) and no whitespace: one serialisation for
 * one value, whatever order its keys were built in. Values are JSON values (no `undefined`).
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value)
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .sort();
    const parts = keys.map(
      (k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`,
    );
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * The commit hash: SHA-256 of the canonical JSON of the body. It covers the parent's commit hash,
 * so it pins the whole lineage, and the tree hash, so it pins the content.
 */
export function commitHashOf(body: BankCommitBody): string {
  const { format, bankId, version, parent, treeHash, manifest, limits, author, role, message } =
    body;
  return sha256Hex(
    canonicalJson({
      format,
      bankId,
      version,
      parent,
      treeHash,
      manifest,
      limits,
      author,
      role,
      message,
      createdAt: body.createdAt,
    }),
  );
}
