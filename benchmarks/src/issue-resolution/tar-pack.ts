/** One file of {@link packTar}. */
export interface TarFileEntry {
  /** Relative path (`/`-separated, no `..`). */
  path: string;
  /** Content. */
  data: Uint8Array;
  /** Permission bits. @default 0o644 */
  mode?: number;
}

const BLOCK = 512;

function writeString(buf: Buffer, offset: number, length: number, value: string): void {
  buf.write(value, offset, Math.min(length, Buffer.byteLength(value)), 'utf8');
}

function writeOctal(buf: Buffer, offset: number, length: number, value: number): void {
  writeString(buf, offset, length, `${value.toString(8).padStart(length - 1, '0')}\0`);
}

function header(name: string, size: number, mode: number, type: '0' | '5'): Buffer {
  const h = Buffer.alloc(BLOCK);
  let prefix = '';
  let base = name;
  if (Buffer.byteLength(name) > 100) {
    // ustar splits long names at a `/` into a 155-byte prefix and a 100-byte name.
    const cut = name.lastIndexOf('/', 155);
    if (cut <= 0 || Buffer.byteLength(name.slice(cut + 1)) > 100) {
      throw new Error(`path too long for a tar entry: ${name}`);
    }
    prefix = name.slice(0, cut);
    base = name.slice(cut + 1);
  }
  writeString(h, 0, 100, base);
  writeOctal(h, 100, 8, mode);
  writeOctal(h, 108, 8, 0); // uid: the receiver sets the owner
  writeOctal(h, 116, 8, 0);
  writeOctal(h, 124, 12, size);
  writeOctal(h, 136, 12, 0); // mtime 0: the same files always make the same tar
  h.fill(' ', 148, 156);
  h.write(type, 156, 'ascii');
  writeString(h, 257, 6, 'ustar\0');
  writeString(h, 263, 2, '00');
  writeString(h, 345, 155, prefix);
  let sum = 0;
  for (const byte of h) sum += byte;
  writeString(h, 148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return h;
}

/**
 * A POSIX ustar archive of `files` (parent folders added), deterministic: sorted, mtime 0, owner
 * 0. Enough for task repos and graders; the node agent unpacks it.
 */
export function packTar(files: readonly TarFileEntry[]): Buffer {
  const parts: Buffer[] = [];
  const dirs = new Set<string>();
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (const f of sorted) {
    if (f.path.split('/').some((s) => s === '' || s === '.' || s === '..')) {
      throw new Error(`not a clean relative path: ${f.path}`);
    }
    const segments = f.path.split('/');
    for (let i = 1; i < segments.length; i++) {
      const dir = `${segments.slice(0, i).join('/')}/`;
      if (!dirs.has(dir)) {
        dirs.add(dir);
        parts.push(header(dir, 0, 0o755, '5'));
      }
    }
    parts.push(header(f.path, f.data.length, f.mode ?? 0o644, '0'));
    parts.push(Buffer.from(f.data));
    const pad = (BLOCK - (f.data.length % BLOCK)) % BLOCK;
    if (pad > 0) parts.push(Buffer.alloc(pad));
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(parts);
}
