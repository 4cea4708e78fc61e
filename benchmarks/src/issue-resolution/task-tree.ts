import { type Stats } from 'node:fs';
import { lstat, readdir, readFile, readlink } from 'node:fs/promises';
import path from 'node:path';
import { type Readable } from 'node:stream';
import { packStream } from '@troupe/node-agent';

/** One entry of a task tree (`repo/`, `grader/`), as {@link scanTree} found it. */
export interface TreeEntry {
  /** `/`-separated path relative to the tree's root. */
  rel: string;
  type: 'file' | 'directory' | 'symlink';
  /** Bytes of a file (0 otherwise). */
  size: number;
  /** Permission bits (`mode & 0o777`). */
  mode: number;
  /** A symlink's target, as stored (always relative and inside the tree). */
  linkname?: string;
}

/** A tree listed by {@link scanTree}. */
export interface TreeScan {
  /** Absolute root. */
  root: string;
  /** Every entry, in packing order (depth first, names sorted). */
  entries: TreeEntry[];
  /** Bytes of its files. */
  bytes: number;
}

/** A tree entry that cannot be copied: `field` names it (`repo/lib/link`), `rule` says why. */
export class TreeEntryError extends Error {
  constructor(
    readonly field: string,
    readonly rule: string,
  ) {
    super(`${field}: ${rule}`);
    this.name = 'TreeEntryError';
  }

  /** The TreeEntryError in `err`'s cause chain (a store wraps the stream's error), if any. */
  static in(err: unknown): TreeEntryError | undefined {
    for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
      if (e instanceof TreeEntryError) return e;
    }
    return undefined;
  }
}

const EPOCH = new Date(0);

function kindOf(st: Stats): string {
  if (st.isFIFO()) return 'a named pipe';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a file, folder or symlink';
}

/** Entries of one folder whose metadata is asked for at once: a bounded batch on libuv's pool. */
const LSTAT_BATCH = 64;

/**
 * Lists every entry under `root` — dot files, `node_modules`, `__pycache__` and symlinks included,
 * nothing skipped — without following symlinks. `label` (e.g. `repo/`) prefixes the names in
 * errors. A symlink whose target is absolute or leads outside `root` is refused (it would read
 * files of the host, or the hidden grader, once copied), and so is anything that is not a file, a
 * folder or a symlink (a named pipe, a socket, a device).
 *
 * Asynchronous: a job's validation scans every task's repository on the coordinator's event loop,
 * and a real repository has thousands of entries (a synchronous scan of a 4,000-file checkout
 * held the loop for about 50 ms, and a suite scans one per task, twice).
 * @throws TreeEntryError naming the entry
 */
export async function scanTree(root: string, label: string): Promise<TreeScan> {
  const abs = path.resolve(root);
  const entries: TreeEntry[] = [];
  let bytes = 0;
  const walk = async (rel: string): Promise<void> => {
    const names = (await readdir(path.join(abs, rel))).sort();
    for (let start = 0; start < names.length; start += LSTAT_BATCH) {
      const batch = names.slice(start, start + LSTAT_BATCH);
      const stats = await Promise.all(
        batch.map((name) => lstat(path.join(abs, rel === '' ? name : `${rel}/${name}`))),
      );
      for (let i = 0; i < batch.length; i++) {
        const name = batch[i]!;
        const st = stats[i]!;
        const childRel = rel === '' ? name : `${rel}/${name}`;
        const mode = st.mode & 0o777;
        if (st.isSymbolicLink()) {
          const linkname = await readlink(path.join(abs, childRel));
          const target = path.posix.normalize(
            path.posix.join(path.posix.dirname(childRel), linkname),
          );
          if (path.posix.isAbsolute(linkname) || target === '..' || target.startsWith('../')) {
            throw new TreeEntryError(
              `${label}${childRel}`,
              `is a symlink pointing outside ${label} (to ${linkname}): only symlinks inside the tree are copied`,
            );
          }
          entries.push({ rel: childRel, type: 'symlink', size: 0, mode, linkname });
        } else if (st.isDirectory()) {
          entries.push({ rel: childRel, type: 'directory', size: 0, mode });
          await walk(childRel);
        } else if (st.isFile()) {
          entries.push({ rel: childRel, type: 'file', size: st.size, mode });
          bytes += st.size;
        } else {
          throw new TreeEntryError(
            `${label}${childRel}`,
            `is ${kindOf(st)}: only files, folders and symlinks are copied`,
          );
        }
      }
    }
  };
  await walk('');
  return { root: abs, entries, bytes };
}

/**
 * A tar stream of a scanned tree: every entry with its permission bits and symlink targets,
 * deterministic (scan order, mtime 0, owner 0), PAX headers for long names. Files are read as the
 * stream is consumed (one at a time), so a tree of any size streams in bounded memory. A file that
 * changed size since the scan fails the stream with a {@link TreeEntryError}.
 */
export function packTree(scan: TreeScan, label: string): Readable {
  return packStream(async (add) => {
    for (const e of scan.entries) {
      const base = { mode: e.mode, mtime: EPOCH, uid: 0, gid: 0, uname: '', gname: '' };
      if (e.type === 'directory') {
        await add({ ...base, name: `${e.rel}/`, type: 'directory' });
      } else if (e.type === 'symlink') {
        await add({ ...base, name: e.rel, type: 'symlink', linkname: e.linkname ?? '' });
      } else {
        const data = await readFile(path.join(scan.root, e.rel));
        if (data.length !== e.size) {
          throw new TreeEntryError(
            `${label}${e.rel}`,
            `changed while it was being copied (${e.size} bytes listed, ${data.length} read)`,
          );
        }
        await add({ ...base, name: e.rel, type: 'file', size: data.length }, data);
      }
    }
  });
}
