import { mkdir, mkdtemp, readdir, rename, rm, stat, utimes } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathKind } from '../path-kind';

/**
 * Where SWE-bench instances are materialised (checkouts at `base_commit`, generated graders):
 * folders named by the digest of what they hold, so a load, a later load and a resumed job's
 * re-staging reuse them, and they are never written twice.
 */
export const SWE_BENCH_CACHE_DIR = path.join(os.tmpdir(), 'troupe-swe-bench');

/**
 * A cache folder not used for this long is removed by the next load of any SWE-bench suite
 * (every use refreshes its time), so the cache holds what recent jobs used. @default 7 days
 */
export const SWE_BENCH_CACHE_MAX_AGE_MS = 7 * 24 * 60 * 60 * 1000;

/** A half-written folder (a load that crashed while filling it) older than this is removed. */
const UNFINISHED_MAX_AGE_MS = 60 * 60 * 1000;

const ENTRY = /^(repo|grader)-[0-9a-f]{64}$/;
const UNFINISHED = /^\.(repo|grader)-/;

/** Folders being filled by this process: a second load of one waits for the first. */
const filling = new Map<string, Promise<string>>();

/**
 * The cache folder `<kind>-<key>` of `cacheDir`, made by `fill` (into a temporary folder, renamed
 * into place, so a folder that exists is complete) unless it exists; a folder found is marked
 * used now, so pruning keeps it. Every file operation is asynchronous, and `fill` is too: a
 * suite is loaded on the coordinator's event loop. Two loads of one folder in this process share
 * one fill; loads in two processes both fill, and the first rename wins.
 */
export async function cachedFolder(
  cacheDir: string,
  kind: 'repo' | 'grader',
  key: string,
  fill: (dir: string) => Promise<void>,
): Promise<string> {
  const dir = path.join(cacheDir, `${kind}-${key}`);
  const pending = filling.get(dir);
  if (pending) return pending;
  const made = (async () => {
    try {
      const now = new Date();
      await utimes(dir, now, now);
      return dir;
    } catch {
      // Not made yet, or pruned by another process meanwhile: made below.
    }
    await mkdir(cacheDir, { recursive: true });
    const tmp = await mkdtemp(path.join(cacheDir, `.${kind}-`));
    try {
      await fill(tmp);
      await rename(tmp, dir);
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      // Another process made the same folder first.
      if ((await pathKind(dir)) === undefined) throw err;
    }
    return dir;
  })();
  filling.set(dir, made);
  try {
    return await made;
  } finally {
    filling.delete(dir);
  }
}

/**
 * Removes the cache folders of `cacheDir` last used more than `maxAgeMs` ago, and half-written
 * ones older than an hour. Only the loader's own folders (`repo-<sha256>`, `grader-<sha256>`,
 * `.repo-*`, `.grader-*`) are ever removed. Returns the names removed.
 */
export async function pruneSweBenchCache(
  cacheDir: string,
  options: { maxAgeMs?: number; nowMs?: number } = {},
): Promise<string[]> {
  const maxAgeMs = options.maxAgeMs ?? SWE_BENCH_CACHE_MAX_AGE_MS;
  const nowMs = options.nowMs ?? Date.now();
  let names: string[];
  try {
    names = await readdir(cacheDir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const limit = ENTRY.test(name)
      ? maxAgeMs
      : UNFINISHED.test(name)
        ? Math.max(maxAgeMs, UNFINISHED_MAX_AGE_MS)
        : undefined;
    if (limit === undefined) continue;
    const full = path.join(cacheDir, name);
    try {
      if (nowMs - (await stat(full)).mtimeMs <= limit) continue;
      await rm(full, { recursive: true, force: true });
      removed.push(name);
    } catch {
      // Removed meanwhile by another load: nothing to do.
    }
  }
  return removed;
}
