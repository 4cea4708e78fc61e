/** One hunk of a unified diff. */
export interface PatchHunk {
  /** First line of the hunk in the old file (1-based; 0 for an empty old file). */
  oldStart: number;
  /** Lines as written: ' ' context, '-' removed, '+' added (prefix kept). */
  lines: string[];
}

/** The changes to one file. */
export interface FilePatch {
  /** Path before (`null` when the file is created). */
  oldPath: string | null;
  /** Path after (`null` when the file is deleted). */
  newPath: string | null;
  hunks: PatchHunk[];
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

function stripPrefix(raw: string): string | null {
  const name = raw.split('\t')[0]!.trim();
  if (name === '/dev/null') return null;
  // `diff -ruN` writes the folder names (a/, b/); git writes a/ and b/ too.
  const slash = name.indexOf('/');
  const rel = slash >= 0 ? name.slice(slash + 1) : name;
  if (rel === '' || rel.startsWith('/') || rel.split('/').includes('..')) {
    throw new Error(`unsafe path in patch: ${name}`);
  }
  return rel;
}

/**
 * Parses a unified diff (`diff -ruN a b` or `git diff`): files and hunks. Throws a message naming
 * the line when it is not one. A file created from nothing uses `--- /dev/null` or an `@@ -0,0`
 * hunk.
 */
export function parsePatch(text: string): FilePatch[] {
  const lines = text.split('\n');
  const files: FilePatch[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (!line.startsWith('--- ')) {
      i++;
      continue;
    }
    const next = lines[i + 1];
    if (next === undefined || !next.startsWith('+++ ')) {
      throw new Error(`line ${i + 2}: expected a '+++ ' line after '--- '`);
    }
    const file: FilePatch = {
      oldPath: stripPrefix(line.slice(4)),
      newPath: stripPrefix(next.slice(4)),
      hunks: [],
    };
    i += 2;
    while (i < lines.length && lines[i]!.startsWith('@@')) {
      const m = HUNK_HEADER.exec(lines[i]!);
      if (!m) throw new Error(`line ${i + 1}: malformed hunk header`);
      let oldLeft = m[2] === undefined ? 1 : Number(m[2]);
      let newLeft = m[4] === undefined ? 1 : Number(m[4]);
      const hunk: PatchHunk = { oldStart: Number(m[1]), lines: [] };
      i++;
      while (oldLeft > 0 || newLeft > 0) {
        const l = lines[i];
        if (l === undefined) throw new Error(`line ${i + 1}: hunk ends early`);
        if (l.startsWith('\\')) {
          i++;
          continue;
        }
        const kind = l === '' ? ' ' : l[0];
        if (kind === ' ') {
          oldLeft--;
          newLeft--;
        } else if (kind === '-') oldLeft--;
        else if (kind === '+') newLeft--;
        else throw new Error(`line ${i + 1}: unexpected '${l.slice(0, 20)}' inside a hunk`);
        hunk.lines.push(l === '' ? ' ' : l);
        i++;
      }
      if (oldLeft < 0 || newLeft < 0) throw new Error(`line ${i}: hunk longer than its header`);
      while (lines[i]?.startsWith('\\')) i++;
      file.hunks.push(hunk);
    }
    if (file.hunks.length === 0 && file.oldPath !== null && file.newPath !== null) {
      throw new Error(`line ${i}: no hunk for ${file.newPath}`);
    }
    files.push(file);
  }
  if (files.length === 0) throw new Error('no file changes found');
  return files;
}

/**
 * Applies one file's hunks to its old content (exact context, no fuzz; hunks may have moved by
 * a few lines). Throws naming the hunk that does not apply.
 */
export function applyFilePatch(old: string, patch: FilePatch): string {
  const eol = old.endsWith('\n');
  const src = old === '' ? [] : (eol ? old.slice(0, -1) : old).split('\n');
  const out: string[] = [];
  let pos = 0;
  patch.hunks.forEach((hunk, h) => {
    const before = hunk.lines.filter((l) => l[0] !== '+').map((l) => l.slice(1));
    const after = hunk.lines.filter((l) => l[0] !== '-').map((l) => l.slice(1));
    const want = Math.max(0, hunk.oldStart - 1);
    const matches = (at: number): boolean =>
      at >= pos && at + before.length <= src.length && before.every((l, k) => src[at + k] === l);
    let at = -1;
    for (let d = 0; d <= src.length; d++) {
      if (matches(want + d)) {
        at = want + d;
        break;
      }
      if (d > 0 && matches(want - d)) {
        at = want - d;
        break;
      }
    }
    if (at < 0) {
      throw new Error(`hunk ${h + 1} of ${patch.newPath ?? patch.oldPath} does not apply`);
    }
    out.push(...src.slice(pos, at), ...after);
    pos = at + before.length;
  });
  out.push(...src.slice(pos));
  if (out.length === 0) return '';
  return `${out.join('\n')}${eol || old === '' ? '\n' : ''}`;
}
