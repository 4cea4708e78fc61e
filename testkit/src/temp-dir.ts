import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** A directory created for one test, and the way to remove it. */
export interface TempDir {
  /** Absolute path of the directory. */
  readonly path: string;
  /** Removes the directory and everything in it; safe to call more than once. */
  cleanup(): Promise<void>;
}

/**
 * Creates a fresh directory under the OS temp dir whose name starts with `prefix`.
 *
 * @param prefix - Start of the directory name. @default 'troupe-'
 */
export async function makeTempDir(prefix = 'troupe-'): Promise<TempDir> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  return {
    path: dir,
    cleanup: () => rm(dir, { recursive: true, force: true, maxRetries: 3 }),
  };
}

/**
 * Runs `fn` with a fresh temp directory and removes the directory afterwards, whether `fn`
 * resolves or throws.
 *
 * @param prefix - Start of the directory name. @default 'troupe-'
 */
export async function withTempDir<T>(
  fn: (dir: string) => T | Promise<T>,
  prefix = 'troupe-',
): Promise<T> {
  const dir = await makeTempDir(prefix);
  try {
    return await fn(dir.path);
  } finally {
    await dir.cleanup();
  }
}
