import { Readable } from 'node:stream';
import { gunzipSync, gzipSync } from 'node:zlib';
import { ErrorCode, invalidArgument, TroupeError } from '@troupe/proto';
import { extract, pack } from 'tar-stream';
import { z } from 'zod';
import { bankIntegrityError } from './bank-integrity';
import { type BankLimits, type BankLimitsOptions, parseBankLimits } from './bank-limits';
import { parseManifest, treeHashOf } from './bank-manifest';
import { bankBytes, MemoryBank } from './memory-bank';

/** Format name written into `bank.json`. */
export const BANK_TARBALL_FORMAT = 'troupe-memory-bank/1';
/** Name of the metadata entry. */
const META_ENTRY = 'bank.json';
/** Name of the canonical manifest entry (its bytes are exactly what the tree hash covers). */
const MANIFEST_ENTRY = 'MANIFEST';
/** Prefix of every bank file's entry. */
const FILES_PREFIX = 'files/';
/** Largest `bank.json` accepted on import. */
const MAX_META_BYTES = 64 * 1024;

/** Options of {@link exportBankTarball}. */
export interface ExportBankTarballOptions {
  /** JSON-serialisable facts to keep in `bank.json` under `meta` (bank id, version, …). */
  meta?: Record<string, unknown>;
  /** Modification time written on every entry; fixed so the same bank gives the same bytes. @default the Unix epoch */
  mtime?: Date;
  /** gzip the tarball. @default false */
  gzip?: boolean;
}

/** `bank.json` in a bank tarball. */
const BankTarballMetaSchema = z.object({
  format: z.literal(BANK_TARBALL_FORMAT),
  treeHash: z.string().regex(/^[0-9a-f]{64}$/),
  fileCount: z.number().int().nonnegative(),
  totalBytes: z.number().int().nonnegative(),
  meta: z.record(z.string(), z.unknown()).optional(),
});

/** The content of `bank.json`. */
export type BankTarballMeta = z.output<typeof BankTarballMetaSchema>;

/**
 * A tarball of the bank: `bank.json` (format, tree hash, counts, caller's `meta`), `MANIFEST`
 * (the canonical manifest, byte for byte what the tree hash covers) and each file under
 * `files/<path>`, in canonical order, as regular files with mode 0644, uid/gid 0 and a fixed
 * mtime — so the same bank always gives the same bytes.
 */
export async function exportBankTarball(
  bank: MemoryBank,
  options: ExportBankTarballOptions = {},
): Promise<Uint8Array> {
  const mtime = options.mtime ?? new Date(0);
  const meta: BankTarballMeta = {
    format: BANK_TARBALL_FORMAT,
    treeHash: bank.treeHash,
    fileCount: bank.fileCount,
    totalBytes: bank.totalBytes,
    ...(options.meta === undefined ? {} : { meta: options.meta }),
  };
  const p = pack();
  const entry = (name: string, data: Buffer): void => {
    p.entry(
      { name, size: data.byteLength, mode: 0o644, mtime, uid: 0, gid: 0, uname: '', gname: '' },
      data,
    );
  };
  const chunks: Buffer[] = [];
  const done = (async () => {
    for await (const chunk of p) chunks.push(chunk as Buffer);
  })();
  entry(META_ENTRY, Buffer.from(`${JSON.stringify(meta, null, 2)}\n`));
  entry(MANIFEST_ENTRY, Buffer.from(bank.manifestText));
  for (const path of bank.paths) {
    const bytes = bankBytes(bank, path) ?? new Uint8Array();
    entry(`${FILES_PREFIX}${path}`, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  }
  p.finalize();
  await done;
  const tar = Buffer.concat(chunks);
  return options.gzip === true ? gzipSync(tar) : tar;
}

/** Options of {@link importBankTarball}. */
export interface ImportBankTarballOptions {
  /** Boundaries the imported bank must respect. @default the defaults of `BankLimitsSchema` */
  limits?: BankLimitsOptions | BankLimits;
  /** Refuse the tarball unless its tree hash is this one. */
  expectTreeHash?: string;
}

/** What {@link importBankTarball} returns. */
export interface ImportedBank {
  /** The bank. */
  bank: MemoryBank;
  /** The tarball's `bank.json`. */
  meta: BankTarballMeta;
}

function bad(rule: string): TroupeError {
  return invalidArgument('tarball', rule);
}

function integrity(
  message: string,
  details: Parameters<typeof bankIntegrityError>[2],
): TroupeError {
  return bankIntegrityError(ErrorCode.INVALID_ARGUMENT, `tarball: ${message}`, details);
}

/**
 * Reads a bank tarball written by {@link exportBankTarball} (plain or gzip) and verifies it: only
 * regular files `bank.json`, `MANIFEST` and `files/<path>` (directory entries are ignored; links,
 * devices and any other name are refused), every size within the limits before it is read, the
 * files within every bank boundary, `MANIFEST` exactly the canonical manifest of the files, and
 * the tree hash equal to `bank.json`'s (and to `expectTreeHash` when given).
 * @throws TroupeError `INVALID_ARGUMENT` naming the rule broken; a hash or manifest mismatch
 *   carries the `INTEGRITY` reason with `details.mismatch`
 */
export async function importBankTarball(
  data: Uint8Array,
  options: ImportBankTarballOptions = {},
): Promise<ImportedBank> {
  const limits = parseBankLimits(options.limits);
  const manifestCap = 64 + limits.maxFiles * (64 + 1 + 20 + 1 + limits.maxPathLength + 1);
  const tarCap = limits.maxTotalBytes + manifestCap + MAX_META_BYTES + (limits.maxFiles + 3) * 1536;
  let tar: Buffer;
  if (data[0] === 0x1f && data[1] === 0x8b) {
    try {
      tar = gunzipSync(data, { maxOutputLength: tarCap });
    } catch (err) {
      throw new TroupeError(
        ErrorCode.INVALID_ARGUMENT,
        `tarball: gzip data is corrupt or inflates past ${tarCap} bytes`,
        { cause: err, details: { field: 'tarball' } },
      );
    }
  } else {
    tar = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  }
  let metaBytes: Buffer | undefined;
  let manifestBytes: Buffer | undefined;
  const files = new Map<string, Uint8Array>();
  let total = 0;
  const ex = extract();
  Readable.from([tar]).pipe(ex);
  try {
    for await (const e of ex) {
      const { name, type } = e.header;
      const size = e.header.size ?? 0;
      if (type === 'directory' && (name === 'files/' || name.startsWith(FILES_PREFIX))) {
        e.resume();
        continue;
      }
      if (type !== 'file') {
        throw bad(`entry ${JSON.stringify(name)} must be a regular file (is ${String(type)})`);
      }
      let cap: number;
      if (name === META_ENTRY || name === MANIFEST_ENTRY) {
        if ((name === META_ENTRY ? metaBytes : manifestBytes) !== undefined) {
          throw bad(`entry ${JSON.stringify(name)} must appear once`);
        }
        cap = name === META_ENTRY ? MAX_META_BYTES : manifestCap;
      } else if (name.startsWith(FILES_PREFIX)) {
        const path = name.slice(FILES_PREFIX.length);
        if (files.has(path)) throw bad(`entry ${JSON.stringify(name)} must appear once`);
        if (files.size + 1 > limits.maxFiles) {
          throw bad(`must hold at most ${limits.maxFiles} files (maxFiles)`);
        }
        total += size;
        if (total > limits.maxTotalBytes) {
          throw bad(`files must total at most ${limits.maxTotalBytes} bytes (maxTotalBytes)`);
        }
        cap = limits.maxFileBytes;
      } else {
        throw bad(`entry ${JSON.stringify(name)} is not bank.json, MANIFEST or files/<path>`);
      }
      if (size > cap) {
        throw bad(`entry ${JSON.stringify(name)} is ${size} bytes, more than ${cap}`);
      }
      const chunks: Buffer[] = [];
      for await (const chunk of e) chunks.push(chunk as Buffer);
      const bytes = Buffer.concat(chunks);
      if (name === META_ENTRY) metaBytes = bytes;
      else if (name === MANIFEST_ENTRY) manifestBytes = bytes;
      else files.set(name.slice(FILES_PREFIX.length), new Uint8Array(bytes));
    }
  } catch (err) {
    ex.destroy();
    if (err instanceof TroupeError) throw err;
    throw new TroupeError(ErrorCode.INVALID_ARGUMENT, 'tarball: not a readable tar archive', {
      cause: err,
      details: { field: 'tarball' },
    });
  }
  if (metaBytes === undefined) throw bad('must contain bank.json');
  if (manifestBytes === undefined) throw bad('must contain MANIFEST');
  let metaJson: unknown;
  try {
    metaJson = JSON.parse(metaBytes.toString('utf8'));
  } catch {
    throw bad('bank.json must be JSON');
  }
  const metaParsed = BankTarballMetaSchema.safeParse(metaJson);
  if (!metaParsed.success) {
    throw bad(
      `bank.json must be a ${BANK_TARBALL_FORMAT} record (${metaParsed.error.issues[0]?.message ?? 'invalid'})`,
    );
  }
  const meta = metaParsed.data;
  const bank = MemoryBank.create(files, { limits });
  let listed;
  try {
    listed = parseManifest(manifestBytes.toString('utf8'));
  } catch (err) {
    throw integrity(`MANIFEST is not canonical: ${(err as Error).message}`, {
      mismatch: 'manifest',
    });
  }
  const actual = new Map(bank.manifest.map((e) => [e.path, e]));
  for (const entry of listed) {
    const found = actual.get(entry.path);
    if (found === undefined) {
      throw integrity(`MANIFEST lists ${JSON.stringify(entry.path)} but files/ does not have it`, {
        mismatch: 'manifest',
        path: entry.path,
      });
    }
    if (found.sha256 !== entry.sha256 || found.size !== entry.size) {
      throw integrity(
        `files/${entry.path} has sha256 ${found.sha256} (${found.size} bytes) but MANIFEST says ${entry.sha256} (${entry.size} bytes)`,
        { mismatch: 'manifest', path: entry.path, expected: entry.sha256, actual: found.sha256 },
      );
    }
    actual.delete(entry.path);
  }
  const extra = actual.keys().next();
  if (extra.done !== true) {
    throw integrity(`files/${extra.value} is not listed in MANIFEST`, {
      mismatch: 'manifest',
      path: extra.value,
    });
  }
  // The manifest matched the files entry by entry, so this is also bank.treeHash.
  const treeHash = treeHashOf(listed);
  if (meta.treeHash !== treeHash) {
    throw integrity(`tree hash is ${treeHash} but bank.json says ${meta.treeHash}`, {
      mismatch: 'tree-hash',
      expected: meta.treeHash,
      actual: treeHash,
    });
  }
  if (options.expectTreeHash !== undefined && options.expectTreeHash !== treeHash) {
    throw integrity(`tree hash is ${treeHash}, expected ${options.expectTreeHash}`, {
      mismatch: 'expected',
      expected: options.expectTreeHash,
      actual: treeHash,
    });
  }
  return { bank, meta };
}
