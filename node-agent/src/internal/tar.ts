import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { chmod, lstat, mkdir, readdir, readFile, readlink, symlink } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { invalidArgument } from '@troupe/proto';
import tar from 'tar-stream';
import type { FileEntry, FileSource } from '../sandbox';
import { type AddTarEntry, packStream } from '../tar-pack';

/** Owner given to packed entries. */
export interface TarOwner {
  uid: number;
  gid: number;
}

const EPOCH = new Date(0);

/** Reads a whole stream into one buffer. */
export async function collect(
  stream: NodeJS.ReadableStream | AsyncIterable<Buffer | Uint8Array | string>,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer | Uint8Array | string>) {
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

/** Hex sha256 of bytes. */
export function sha256Hex(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Checks a relative tar path: no absolute paths, no `..`, no NUL. */
function safeRelative(name: string, field: string): string {
  const norm = path.posix.normalize(name.replace(/^\.\/+/, ''));
  if (
    name.includes('\0') ||
    path.posix.isAbsolute(name) ||
    norm === '..' ||
    norm.startsWith('../') ||
    norm.split('/').includes('..')
  ) {
    throw invalidArgument(field, 'must be a relative path without ".." segments', name);
  }
  return norm === '.' ? '' : norm.replace(/\/$/, '');
}

function isFileEntry(v: unknown): v is FileEntry {
  return typeof v === 'object' && v !== null && !(v instanceof Uint8Array) && 'content' in v;
}

/**
 * Packs a `{relativePath: content}` map into a tar. Every parent directory gets its own entry
 * owned by `owner` — otherwise Docker would create missing parents as root and the sandbox user
 * could not write into them. Entries are sorted and dated 1970 so equal maps give equal bytes.
 */
export async function packFileMap(
  files: Record<string, string | Uint8Array | FileEntry>,
  owner: TarOwner,
  field = 'files',
): Promise<Buffer> {
  const dirs = new Set<string>();
  const entries: [string, Buffer, number][] = [];
  for (const [name, value] of Object.entries(files)) {
    const rel = safeRelative(name, `${field}[${JSON.stringify(name)}]`);
    if (rel === '') throw invalidArgument(`${field}`, 'file paths must not be empty', name);
    const content = isFileEntry(value) ? value.content : value;
    const mode = isFileEntry(value) && value.mode !== undefined ? value.mode & 0o7777 : 0o644;
    entries.push([
      rel,
      typeof content === 'string' ? Buffer.from(content) : Buffer.from(content),
      mode,
    ]);
    let parent = path.posix.dirname(rel);
    while (parent !== '.' && !dirs.has(parent)) {
      dirs.add(parent);
      parent = path.posix.dirname(parent);
    }
  }
  const sorted = entries.sort((a, b) => (a[0] < b[0] ? -1 : 1));
  return collect(
    packStream(async (add) => {
      for (const dir of [...dirs].sort()) {
        await add({ name: `${dir}/`, type: 'directory', mode: 0o755, mtime: EPOCH, ...owner });
      }
      for (const [name, content, mode] of sorted) {
        await add(
          { name, type: 'file', mode, size: content.length, mtime: EPOCH, ...owner },
          content,
        );
      }
    }),
  );
}

/** How {@link tarStreamOf} rewrites entries. */
export interface TarRewrite {
  /** Put every entry under this relative directory (created, owned by `prefixOwner`). @default '' */
  prefix?: string;
  /** Owner of the created prefix directories. @default `owner`, else root */
  prefixOwner?: TarOwner;
  /** Field name used in error messages. @default 'files' */
  field?: string;
}

function prefixDirs(prefix: string): string[] {
  if (prefix === '') return [];
  const parts = prefix.split('/');
  return parts.map((_, i) => parts.slice(0, i + 1).join('/'));
}

/**
 * Re-packs a tar, streaming: entry names are checked (no absolute paths, no `..`) and moved under
 * `prefix`, and every entry is given `owner` unless it is undefined.
 */
export function rewriteTar(
  input: NodeJS.ReadableStream | Readable,
  owner: TarOwner | undefined,
  rewrite: TarRewrite = {},
): Readable {
  const field = rewrite.field ?? 'files';
  const prefix = rewrite.prefix ?? '';
  const extract = tar.extract();
  const dirOwner = rewrite.prefixOwner ?? owner ?? { uid: 0, gid: 0 };
  const dirs = new Set<string>();
  const copy = async (add: AddTarEntry): Promise<void> => {
    const addDir = async (dir: string): Promise<void> => {
      dirs.add(dir);
      await add({ name: `${dir}/`, type: 'directory', mode: 0o755, mtime: EPOCH, ...dirOwner });
    };
    for (const dir of prefixDirs(prefix)) await addDir(dir);
    for await (const entry of extract) {
      const { header } = entry;
      const rel = safeRelative(header.name, `${field} (tar entry)`);
      const isDir = header.type === 'directory';
      const name = prefix === '' ? rel : rel === '' ? prefix : `${prefix}/${rel}`;
      if (name === '') {
        // The archive's own root ("./"): its metadata would overwrite the destination's.
        entry.resume();
        continue;
      }
      // Docker would create a parent missing from the tar as root: give it an entry of our own.
      const missing: string[] = [];
      for (let p = path.posix.dirname(name); p !== '.' && !dirs.has(p); p = path.posix.dirname(p)) {
        missing.unshift(p);
      }
      for (const dir of missing) await addDir(dir);
      if (isDir) dirs.add(name);
      const h = { ...header, name: isDir ? `${name}/` : name };
      if (owner !== undefined) {
        Object.assign(h, { uid: owner.uid, gid: owner.gid, uname: '', gname: '' });
      }
      await add(h, entry);
    }
  };
  (input as Readable).on('error', (err: Error) => extract.destroy(err));
  (input as Readable).pipe(extract);
  return packStream(async (add) => {
    try {
      await copy(add);
    } catch (err) {
      extract.destroy();
      throw err;
    }
  });
}

/** A tar stream for any {@link FileSource}, rewritten as {@link rewriteTar} describes. */
export async function tarStreamOf(
  files: FileSource,
  owner: TarOwner | undefined,
  rewrite: TarRewrite = {},
): Promise<Readable> {
  const prefix = rewrite.prefix ?? '';
  if (files instanceof Uint8Array) {
    return rewriteTar(Readable.from([Buffer.from(files)]), owner, rewrite);
  }
  if (files instanceof Readable) return rewriteTar(files, owner, rewrite);
  const field = rewrite.field ?? 'files';
  const prefixed: Record<string, string | Uint8Array | FileEntry> = {};
  for (const [name, value] of Object.entries(files)) {
    const rel = safeRelative(name, `${field}[${JSON.stringify(name)}]`);
    prefixed[prefix === '' ? rel : `${prefix}/${rel}`] = value;
  }
  const fileOwner = owner ?? rewrite.prefixOwner ?? { uid: 0, gid: 0 };
  return Readable.from([await packFileMap(prefixed, fileOwner, field)]);
}

/** Options of {@link packDirectory}. */
export interface PackDirectoryOptions {
  /** Owner of every entry. @default the files' own */
  owner?: TarOwner;
  /** Name prefix of every entry (e.g. the directory's basename). @default '' (relative names) */
  prefix?: string;
}

/**
 * Packs a host directory deterministically (sorted, mtime 0): equal trees give equal bytes, so a
 * digest of the tar identifies the content (the evaluator's grader digest relies on it).
 * Regular files, directories and symlinks; other types are skipped.
 */
export async function packDirectory(
  dir: string,
  options: PackDirectoryOptions = {},
): Promise<Buffer> {
  const prefix = options.prefix ? `${options.prefix.replace(/\/$/, '')}/` : '';
  return collect(
    packStream(async (add) => {
      if (prefix !== '') {
        const st = await lstat(dir);
        await add({
          name: prefix,
          type: 'directory',
          mode: st.mode & 0o7777,
          mtime: EPOCH,
          ...ownerOf(st, options),
        });
      }
      const walk = async (rel: string): Promise<void> => {
        const names = (await readdir(path.join(dir, rel))).sort();
        for (const name of names) {
          const relPath = rel === '' ? name : `${rel}/${name}`;
          const abs = path.join(dir, relPath);
          const st = await lstat(abs);
          const base = {
            name: `${prefix}${relPath}`,
            mode: st.mode & 0o7777,
            mtime: EPOCH,
            ...ownerOf(st, options),
          };
          if (st.isDirectory()) {
            await add({ ...base, name: `${base.name}/`, type: 'directory' });
            await walk(relPath);
          } else if (st.isFile()) {
            const content = await readFile(abs);
            await add({ ...base, type: 'file', size: content.length }, content);
          } else if (st.isSymbolicLink()) {
            await add({ ...base, type: 'symlink', linkname: await readlink(abs) });
          }
        }
      };
      await walk('');
    }),
  );
}

function ownerOf(st: { uid: number; gid: number }, options: PackDirectoryOptions): TarOwner {
  return options.owner ?? { uid: st.uid, gid: st.gid };
}

/**
 * Extracts a tar under `destDir` (the process backend's putFiles). Refuses names that escape it
 * and symlinks that point outside; keeps modes; ignores owners.
 */
export async function extractTarTo(input: Readable, destDir: string): Promise<void> {
  const extract = tar.extract();
  const root = path.resolve(destDir);
  const inside = (p: string): boolean => p === root || p.startsWith(`${root}${path.sep}`);
  const done = (async () => {
    for await (const entry of extract) {
      const { header } = entry;
      const rel = safeRelative(header.name, 'files (tar entry)');
      const target = path.join(root, rel);
      if (!inside(target))
        throw invalidArgument('files (tar entry)', 'must stay inside the destination', header.name);
      const mode = (header.mode ?? 0o644) & 0o7777;
      if (header.type === 'directory') {
        await mkdir(target, { recursive: true });
        await chmod(target, mode);
        entry.resume();
      } else if (
        header.type === 'file' ||
        header.type === 'contiguous-file' ||
        header.type == null
      ) {
        await mkdir(path.dirname(target), { recursive: true });
        await pipeline(entry, createWriteStream(target, { mode }));
        await chmod(target, mode);
      } else if (header.type === 'symlink' && header.linkname) {
        const resolved = path.resolve(path.dirname(target), header.linkname);
        if (!inside(resolved)) {
          throw invalidArgument(
            'files (tar entry)',
            'symlinks must point inside the destination',
            header.name,
          );
        }
        await mkdir(path.dirname(target), { recursive: true });
        await symlink(header.linkname, target);
        entry.resume();
      } else {
        entry.resume();
      }
    }
  })();
  input.on('error', (err) => extract.destroy(err));
  input.pipe(extract);
  await done;
}
