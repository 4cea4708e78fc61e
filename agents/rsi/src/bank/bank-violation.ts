import { type BankLimits } from './bank-limits';
import { comparePaths } from './bank-manifest';
import { bankPathRule } from './bank-path';

/** Which boundary a bank or a change to it breaks. */
export const BankRule = {
  /** A path breaks the path rules (relative, charset, depth, length, …). */
  PATH: 'path',
  /** A path is both a file and a directory, or equals another ignoring case. */
  PATH_CONFLICT: 'path-conflict',
  /** A file is larger than `maxFileBytes`. */
  FILE_SIZE: 'file-size',
  /** The files add up to more than `maxTotalBytes`. */
  TOTAL_SIZE: 'total-size',
  /** There are more than `maxFiles` files. */
  FILE_COUNT: 'file-count',
  /** A file that must be UTF-8 text is not. */
  FORMAT: 'format',
  /** A change set is malformed or does not fit the bank (adding an existing path, …). */
  CHANGE: 'change',
} as const;

/** One of the {@link BankRule} values. */
export type BankRule = (typeof BankRule)[keyof typeof BankRule];

/** One broken boundary: which rule, which field, and a message that names both. */
export interface BankViolation {
  /** The rule broken. */
  rule: BankRule;
  /** The offending field, e.g. `files["a/b.md"]` or `changes[2].path`. */
  field: string;
  /** The bank path concerned, when there is one. */
  path?: string;
  /** `<field>: <rule in words>`. */
  message: string;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Whether bytes are valid UTF-8. */
export function isUtf8(bytes: Uint8Array): boolean {
  try {
    utf8.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/** Whether `limits` require the file at `path` to be UTF-8 text. */
export function mustBeUtf8(path: string, limits: BankLimits): boolean {
  if (limits.utf8 === 'all') return true;
  if (limits.utf8 === 'none') return false;
  return limits.utf8.some((ext) => path.endsWith(ext));
}

/** `files["<path>"]`: how violations name a file of a bank. */
export function fileField(path: string): string {
  return `files[${JSON.stringify(path)}]`;
}

function violation(rule: BankRule, field: string, text: string, path?: string): BankViolation {
  return { rule, field, ...(path === undefined ? {} : { path }), message: `${field}: ${text}` };
}

/**
 * Every boundary a set of files breaks under `limits`, in a stable order (per-file rules in
 * path order, then the bank-wide ones); empty when the files make a valid bank. `fieldOf` names
 * each file's field in the messages (default `files["<path>"]`).
 */
export function checkBankFiles(
  files: ReadonlyMap<string, Uint8Array>,
  limits: BankLimits,
  fieldOf: (path: string) => string = fileField,
): BankViolation[] {
  const out: BankViolation[] = [];
  const paths = [...files.keys()].sort(comparePaths);
  const byFolded = new Map<string, string>();
  let total = 0;
  for (const path of paths) {
    const bytes = files.get(path) ?? new Uint8Array();
    const field = fieldOf(path);
    total += bytes.byteLength;
    const pathRule = bankPathRule(path, limits);
    if (pathRule !== undefined) {
      out.push(violation(BankRule.PATH, field, `path ${pathRule}`, path));
      continue;
    }
    const folded = path.toLowerCase();
    const twin = byFolded.get(folded);
    if (twin !== undefined) {
      out.push(
        violation(
          BankRule.PATH_CONFLICT,
          field,
          `path must not equal ${JSON.stringify(twin)} ignoring case`,
          path,
        ),
      );
    } else {
      byFolded.set(folded, path);
    }
    // Sorted order puts "a" before "a/…", so one look at each ancestor finds a file/dir clash.
    const segments = path.split('/');
    for (let i = 1; i < segments.length; i++) {
      const ancestor = segments.slice(0, i).join('/');
      if (files.has(ancestor)) {
        out.push(
          violation(
            BankRule.PATH_CONFLICT,
            field,
            `path is inside ${JSON.stringify(ancestor)}, which is a file`,
            path,
          ),
        );
        break;
      }
    }
    if (bytes.byteLength > limits.maxFileBytes) {
      out.push(
        violation(
          BankRule.FILE_SIZE,
          field,
          `file is ${bytes.byteLength} bytes, more than maxFileBytes (${limits.maxFileBytes})`,
          path,
        ),
      );
    }
    if (mustBeUtf8(path, limits) && !isUtf8(bytes)) {
      out.push(violation(BankRule.FORMAT, field, 'file must be valid UTF-8 text', path));
    }
  }
  if (paths.length > limits.maxFiles) {
    out.push(
      violation(
        BankRule.FILE_COUNT,
        'files',
        `bank has ${paths.length} files, more than maxFiles (${limits.maxFiles})`,
      ),
    );
  }
  if (total > limits.maxTotalBytes) {
    out.push(
      violation(
        BankRule.TOTAL_SIZE,
        'files',
        `bank totals ${total} bytes, more than maxTotalBytes (${limits.maxTotalBytes})`,
      ),
    );
  }
  return out;
}
