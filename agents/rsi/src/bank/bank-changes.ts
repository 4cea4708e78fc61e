import { z } from 'zod';
import { type BankLimits, type BankLimitsOptions, parseBankLimits } from './bank-limits';
import { bankPathSchema } from './bank-path';
import { type BankRule, type BankViolation, checkBankFiles } from './bank-violation';
import { bankBytes, bankFromChecked, contentBytes, type MemoryBank } from './memory-bank';

/** Content of an added or modified file: text (stored as UTF-8) or bytes. */
const ContentSchema = z.union([z.string(), z.instanceof(Uint8Array)], {
  error: 'must be a string or a Uint8Array',
});

/** The change-set schema for a bank with `limits` (paths are checked against them). */
export function bankChangeSetSchema(limits: BankLimits) {
  const path = bankPathSchema(limits);
  const change = z.discriminatedUnion(
    'op',
    [
      z.strictObject({ op: z.literal('add'), path, content: ContentSchema }),
      z.strictObject({ op: z.literal('modify'), path, content: ContentSchema }),
      z.strictObject({ op: z.literal('delete'), path }),
    ],
    { error: 'must be an object whose op is one of add, modify, delete' },
  );
  return z.array(change);
}

/** One change to a bank: add a new file, modify an existing one, or delete one. */
export type BankChange =
  | { op: 'add'; path: string; content: Uint8Array | string }
  | { op: 'modify'; path: string; content: Uint8Array | string }
  | { op: 'delete'; path: string };

/** Why a change set was refused: a one-line reason and every violation behind it. */
export interface BankRejection {
  /** Every violation's message, joined by `; `. */
  reason: string;
  /** The violations, in a stable order. */
  violations: BankViolation[];
}

/** What {@link applyBankChanges} returns. */
export type BankChangeResult =
  | {
      ok: true;
      /** The new bank (the input bank is left as it is). */
      bank: MemoryBank;
      /** Paths added, modified (content differs) and deleted, in the order given. */
      added: string[];
      modified: string[];
      deleted: string[];
    }
  | { ok: false; rejection: BankRejection };

/** Options of {@link applyBankChanges}. */
export interface ApplyBankChangesOptions {
  /** The boundaries the new bank must respect. @default the limits `bank` was created with */
  limits?: BankLimitsOptions | BankLimits;
}

function reject(violations: BankViolation[]): BankChangeResult {
  return {
    ok: false,
    rejection: { reason: violations.map((v) => v.message).join('; '), violations },
  };
}

function fieldOfIssue(path: readonly PropertyKey[]): string {
  let out = 'changes';
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : `.${String(key)}`;
  return out;
}

/**
 * Checks a proposed change set (untrusted: a lesson from a model, a message from another
 * process) against a bank and its boundaries. Either every change applies and the result is a
 * new bank within the limits, or nothing applies and the rejection names each field and rule
 * broken: a malformed change, a path rule, `add` of an existing path, `modify`/`delete` of a
 * missing one, two changes to one path, or a file size, total size, file count, path conflict or
 * UTF-8 rule of the resulting bank. Never throws for bad input.
 */
export function applyBankChanges(
  bank: MemoryBank,
  changes: unknown,
  options: ApplyBankChangesOptions = {},
): BankChangeResult {
  const limits = options.limits === undefined ? bank.limits : parseBankLimits(options.limits);
  const parsed = bankChangeSetSchema(limits).safeParse(changes);
  if (!parsed.success) {
    return reject(
      parsed.error.issues.map((issue) => {
        const field = fieldOfIssue(issue.path);
        const rule: BankRule = issue.path[issue.path.length - 1] === 'path' ? 'path' : 'change';
        const message = rule === 'path' ? `path ${issue.message}` : issue.message;
        return { rule, field, message: `${field}: ${message}` };
      }),
    );
  }
  const files = new Map<string, Uint8Array>();
  for (const path of bank.paths) files.set(path, bankBytes(bank, path) ?? new Uint8Array());
  const violations: BankViolation[] = [];
  const fieldByPath = new Map<string, string>();
  const added: string[] = [];
  const modified: string[] = [];
  const deleted: string[] = [];
  parsed.data.forEach((change, i) => {
    const field = `changes[${i}]`;
    const fail = (text: string): void => {
      violations.push({ rule: 'change', field, path: change.path, message: `${field}: ${text}` });
    };
    const earlier = fieldByPath.get(change.path);
    if (earlier !== undefined) {
      fail(`changes ${JSON.stringify(change.path)} again (already changed by ${earlier})`);
      return;
    }
    fieldByPath.set(change.path, field);
    const exists = files.has(change.path);
    if (change.op === 'add') {
      if (exists) return fail(`add of ${JSON.stringify(change.path)}, which already exists`);
      files.set(change.path, contentBytes(change.content));
      added.push(change.path);
    } else if (change.op === 'modify') {
      if (!exists) return fail(`modify of ${JSON.stringify(change.path)}, which does not exist`);
      const before = files.get(change.path) ?? new Uint8Array();
      const after = contentBytes(change.content);
      files.set(change.path, after);
      if (Buffer.compare(before, after) !== 0) modified.push(change.path);
    } else {
      if (!exists) return fail(`delete of ${JSON.stringify(change.path)}, which does not exist`);
      files.delete(change.path);
      deleted.push(change.path);
    }
    return undefined;
  });
  if (violations.length > 0) return reject(violations);
  // Name each file by the change that touched it, so the reason points at the lesson's field.
  const boundary = checkBankFiles(files, limits, (path) => {
    const f = fieldByPath.get(path);
    return f ?? `files[${JSON.stringify(path)}]`;
  });
  if (boundary.length > 0) return reject(boundary);
  return { ok: true, bank: bankFromChecked(files, limits), added, modified, deleted };
}
