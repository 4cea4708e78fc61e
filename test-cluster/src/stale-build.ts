import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** One package whose `dist/` is older than its sources. */
export interface StalePackage {
  /** The package folder, relative to the repository root (e.g. `coordinator`). */
  readonly folder: string;
  /** Inputs (relative to the root) newer than the package's last build; at most 5. */
  readonly newer: readonly string[];
}

/**
 * The packages of `<root>/tsconfig.build.json` whose last build is older than an input: a
 * `src/**\/*.ts` file, the package's `tsconfig.json` or the root `tsconfig.base.json` modified
 * after `dist/.tsbuildinfo` (which `tsc -b` writes, or touches, at the end of every build of the
 * package), or no `dist/.tsbuildinfo` at all.
 */
export function stalePackages(root: string): StalePackage[] {
  const build = JSON.parse(readFileSync(path.join(root, 'tsconfig.build.json'), 'utf8')) as {
    references?: { path: string }[];
  };
  const stale: StalePackage[] = [];
  for (const ref of build.references ?? []) {
    const dir = path.resolve(root, ref.path);
    const builtAt = mtimeOf(path.join(dir, 'dist', '.tsbuildinfo'));
    const inputs = [
      path.join(root, 'tsconfig.base.json'),
      path.join(dir, 'tsconfig.json'),
      ...sourceFiles(path.join(dir, 'src')),
    ];
    const newer = inputs.filter((f) => mtimeOf(f) > builtAt).map((f) => path.relative(root, f));
    if (newer.length > 0)
      stale.push({ folder: path.relative(root, dir), newer: newer.slice(0, 5) });
  }
  return stale;
}

/** A one-line description of stale packages, for a log line or an error. */
export function describeStale(stale: readonly StalePackage[]): string {
  return stale.map((s) => `${s.folder} (${s.newer.join(', ')})`).join('; ');
}

/** `.ts` files under `dir`, depth first (none when it does not exist). */
function sourceFiles(dir: string): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

/** Modification time in ms, or 0 when the file is missing. */
function mtimeOf(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}
