import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ProbeReport } from './process-probe';

/** A process being soaked. */
export interface SoakedProcess {
  /** Name in the report (`coordinator`, `node-agent`, `nats-server`). */
  name: string;
  pid: number;
  /** Directory the process's {@link ProbeReport} is written to (Node processes only). */
  probeDir?: string;
  /**
   * Base URL of a Go process's `net/http/pprof` endpoints (nats-server's `--profile` port): its
   * heap after a forced collection and its goroutines are sampled from there.
   */
  goProfileUrl?: string;
  /** nats-server's monitoring base URL: what its streams store is sampled from `/jsz`. */
  natsMonitorUrl?: string;
  /** The last heap profile sampled from `goProfileUrl` (text), saved with the samples. */
  lastGoProfile?: string;
}

/** One sample of one process. Heap and handles only for a process with a probe. */
export interface ProcessSample {
  /** Seconds since the run started. */
  t: number;
  /** Resident set size, MB (VmRSS of /proc/<pid>/status). */
  rssMb: number;
  /** Open file descriptors (entries of /proc/<pid>/fd). */
  fds: number;
  /** Heap used after a full collection, MB (from the probe; a Go process's `HeapAlloc` after GC). */
  heapMb?: number;
  /** Active handles and requests (from the probe; a Go process's goroutines). */
  handles?: number;
  /** What nats-server's streams store, MB (`/jsz` bytes, every stream). */
  storedMb?: number;
  /**
   * Of a Go process's heap, the file store's block cache, MB (nats-server's allocations under
   * {@link BLOCK_CACHE_FRAMES}: a stream block read is cached whole, the newest one as written).
   */
  blockBuffersMb?: number;
  /**
   * A Go process's heap outside its block cache, MB: judged for growth with the cache in place of
   * the whole heap (see `JUDGED_THROUGH` in soak-run).
   */
  heapOutsideCacheMb?: number;
  /**
   * A Go process's RSS less its block cache, MB: judged for growth with the cache in place of the
   * whole RSS (see `JUDGED_THROUGH` in soak-run). The cache's buffers are heap, and resident.
   */
  rssOutsideCacheMb?: number;
  /** Active handles by kind (from the probe). */
  resources?: Record<string, number>;
  /** How old the probe's report was, seconds. */
  probeAgeS?: number;
}

/** The series a sample has, with their units. */
export const SERIES = [
  { key: 'rssMb', label: 'RSS', unit: 'MB' },
  { key: 'heapMb', label: 'heap used (after GC)', unit: 'MB' },
  { key: 'fds', label: 'file descriptors', unit: '' },
  { key: 'handles', label: 'active handles', unit: '' },
  { key: 'storedMb', label: 'JetStream stored (all streams)', unit: 'MB' },
  { key: 'blockBuffersMb', label: 'block cache (file store)', unit: 'MB' },
  { key: 'heapOutsideCacheMb', label: 'heap outside the block cache (after GC)', unit: 'MB' },
  { key: 'rssOutsideCacheMb', label: 'RSS outside the block cache', unit: 'MB' },
] as const;

/** A series' key in a {@link ProcessSample}. */
export type SeriesKey = (typeof SERIES)[number]['key'];

/** VmRSS of `/proc/<pid>/status`, in MB. */
async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
  if (kb === undefined) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(kb) / 1024;
}

/** GETs `url` as text, failing after 10 s. */
async function getText(url: string): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
  return res.text();
}

/**
 * A Go process's live heap and goroutines: `heap?gc=1` runs a full collection before it writes
 * the profile, whose `runtime.MemStats` footer then gives `HeapAlloc` as the live set (what the
 * Node probe's heap after a full collection is); the goroutine profile's header gives their
 * count, a Go server's equivalent of active handles (every subscription, consumer and
 * connection runs on its own).
 */
export async function sampleGoRuntime(
  baseUrl: string,
): Promise<{ heapMb: number; goroutines: number; blockBuffersMb: number; profile: string }> {
  const [heap, routines] = await Promise.all([
    getText(`${baseUrl}/debug/pprof/heap?gc=1&debug=1`),
    getText(`${baseUrl}/debug/pprof/goroutine?debug=1`),
  ]);
  const alloc = /^# HeapAlloc = (\d+)$/m.exec(heap)?.[1];
  const total = /^goroutine profile: total (\d+)$/m.exec(routines)?.[1];
  if (alloc === undefined) throw new Error(`no HeapAlloc in ${baseUrl}/debug/pprof/heap`);
  if (total === undefined) throw new Error(`no total in ${baseUrl}/debug/pprof/goroutine`);
  return {
    heapMb: Number(alloc) / 1024 / 1024,
    goroutines: Number(total),
    blockBuffersMb: inuseBytesUnder(heap, BLOCK_CACHE_FRAMES) / 1024 / 1024,
    profile: heap,
  };
}

/**
 * Where nats-server's file store allocates its block cache: a block loaded whole to be read
 * (`getMsgBlockBuf`, a pooled buffer) and the newest block's write cache, grown as messages are
 * stored (`writeMsgRecord`).
 */
export const BLOCK_CACHE_FRAMES = [
  '/server.getMsgBlockBuf+',
  '/server.(*msgBlock).writeMsgRecord+',
] as const;

/**
 * Bytes in use (as the profile estimates them) of the allocations whose stack has a function
 * whose name contains `frame` (or one of `frame`; a record counts once), in a Go heap profile
 * written with `debug=1`: each record is a line `<objects>: <bytes> [<allocs>: <bytes>] @ <pcs>`
 * followed by its frames, one `#\t<pc> <function>+<offset> <file>` line each.
 */
export function inuseBytesUnder(profile: string, frame: string | readonly string[]): number {
  const wanted = typeof frame === 'string' ? [frame] : frame;
  let total = 0;
  for (const record of profile.split('\n\n')) {
    const head = /^\d+: (\d+) \[\d+: \d+\] @/m.exec(record);
    if (!head) continue;
    const frames = record.split('\n').filter((l) => l.startsWith('#\t'));
    const names = frames.map((l) => l.split(/\s+/)[2] ?? '');
    if (names.some((n) => wanted.some((w) => n.includes(w)))) total += Number(head[1]);
  }
  return total;
}

/** What nats-server's streams store, MB (`/jsz`'s `bytes`, which counts every stream). */
export async function sampleJetStreamStored(monitorUrl: string): Promise<number> {
  const jsz = JSON.parse(await getText(`${monitorUrl}/jsz`)) as { bytes?: unknown };
  if (typeof jsz.bytes !== 'number') throw new Error(`no bytes in ${monitorUrl}/jsz`);
  return jsz.bytes / 1024 / 1024;
}

/**
 * Samples `p` now: RSS and file descriptors from `/proc`, heap and handles from its probe's last
 * report (or a Go process's pprof), stored bytes from nats-server's `/jsz`. Rejects when the
 * process is gone (its `/proc` entry is missing) or an endpoint it has does not answer.
 */
export async function sampleProcess(p: SoakedProcess, t: number): Promise<ProcessSample> {
  const [rss, fdList] = await Promise.all([rssMb(p.pid), readdir(`/proc/${p.pid}/fd`)]);
  const sample: ProcessSample = { t, rssMb: rss, fds: fdList.length };
  if (p.probeDir !== undefined) {
    try {
      const report = JSON.parse(
        await readFile(path.join(p.probeDir, `${p.pid}.json`), 'utf8'),
      ) as ProbeReport;
      sample.heapMb = report.heapUsed / 1024 / 1024;
      sample.resources = report.resources;
      sample.handles = Object.values(report.resources).reduce((a, b) => a + b, 0);
      sample.probeAgeS = (Date.now() - report.at) / 1000;
    } catch {
      // No report yet (the process is starting): RSS and fds only.
    }
  }
  if (p.goProfileUrl !== undefined) {
    const go = await sampleGoRuntime(p.goProfileUrl);
    sample.heapMb = go.heapMb;
    sample.blockBuffersMb = go.blockBuffersMb;
    sample.heapOutsideCacheMb = Math.max(0, go.heapMb - go.blockBuffersMb);
    sample.rssOutsideCacheMb = Math.max(0, rss - go.blockBuffersMb);
    sample.handles = go.goroutines;
    p.lastGoProfile = go.profile;
    sample.resources = { goroutines: go.goroutines };
  }
  if (p.natsMonitorUrl !== undefined)
    sample.storedMb = await sampleJetStreamStored(p.natsMonitorUrl);
  return sample;
}
