/**
 * Preloaded into a soaked Node process (`NODE_OPTIONS=--require <this file>.js`): every
 * `TROUPE_SOAK_PROBE_MS` (default 2000) it writes what only the process itself can see — heap
 * used after a full garbage collection, and its active handles by kind (timers, sockets, child
 * processes, …) from `process.getActiveResourcesInfo()` — to `<TROUPE_SOAK_PROBE_DIR>/<pid>.json`
 * (written to a temp name and renamed, so a reader never sees half a file). RSS and file
 * descriptors are read from `/proc` by the sampler, not here. Without `TROUPE_SOAK_PROBE_DIR` it
 * does nothing. Its own timer is unref'd and is one `Timeout` in every sample.
 *
 * The full collection (through `--expose-gc`, switched on at run time) makes the heap figure the
 * live set rather than a point on the collector's sawtooth, so a slope of it is a leak, not
 * garbage waiting; it costs the process a few tens of milliseconds per sample.
 */
import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** What the probe writes. */
export interface ProbeReport {
  pid: number;
  /** `Date.now()` of the sample. */
  at: number;
  /** Heap used after a full collection, bytes. */
  heapUsed: number;
  /** Active resources by kind (`Timeout`, `TCPSocketWrap`, `FSReqCallback`, …). */
  resources: Record<string, number>;
}

function collector(): (() => void) | undefined {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (existing) return existing;
  try {
    setFlagsFromString('--expose-gc');
    return runInNewContext('gc') as () => void;
  } catch {
    return undefined;
  }
}

function start(): void {
  const dir = process.env['TROUPE_SOAK_PROBE_DIR'];
  if (!dir) return;
  const everyMs = Number(process.env['TROUPE_SOAK_PROBE_MS'] ?? 2000) || 2000;
  const gc = collector();
  const file = path.join(dir, `${process.pid}.json`);
  const tmp = `${file}.tmp`;
  const sample = () => {
    try {
      gc?.();
      const resources: Record<string, number> = {};
      for (const kind of process.getActiveResourcesInfo()) {
        resources[kind] = (resources[kind] ?? 0) + 1;
      }
      const report: ProbeReport = {
        pid: process.pid,
        at: Date.now(),
        heapUsed: process.memoryUsage().heapUsed,
        resources,
      };
      writeFileSync(tmp, JSON.stringify(report));
      renameSync(tmp, file);
    } catch {
      // A probe never breaks the process it watches (a full disk, a removed directory).
    }
  };
  sample();
  setInterval(sample, everyMs).unref();
}

start();
