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
}

/** One sample of one process. Heap and handles only for a process with a probe. */
export interface ProcessSample {
  /** Seconds since the run started. */
  t: number;
  /** Resident set size, MB (VmRSS of /proc/<pid>/status). */
  rssMb: number;
  /** Open file descriptors (entries of /proc/<pid>/fd). */
  fds: number;
  /** Heap used after a full collection, MB (from the probe). */
  heapMb?: number;
  /** Active handles and requests (from the probe). */
  handles?: number;
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

/**
 * Samples `p` now: RSS and file descriptors from `/proc`, heap and handles from its probe's last
 * report. Rejects when the process is gone (its `/proc` entry is missing).
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
  return sample;
}
