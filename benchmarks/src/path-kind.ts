import { stat } from 'node:fs/promises';

/**
 * What `p` is, following symlinks: a folder, something else (a file, a device), or nothing (it
 * does not exist or cannot be reached). Asynchronous, so a suite loader looking at many paths
 * never holds the event loop (see docs/benchmarks/issue-resolution.md).
 */
export async function pathKind(p: string): Promise<'folder' | 'other' | undefined> {
  try {
    return (await stat(p)).isDirectory() ? 'folder' : 'other';
  } catch {
    return undefined;
  }
}
