import v8 from 'node:v8';

/**
 * Caps how far V8 lets this process's heap grow past the live set before its next full
 * collection: to (1 + `percent`/100) × what the last one kept. 0 leaves V8's own factor.
 *
 * V8 picks that factor from its collector's speed against the allocation rate, up to 4. A
 * coordinator running a job of 100,000 trivial tasks allocates fast and keeps little (a live heap
 * of ~65 MB, flat over the job), so V8 let the old space reach ~320 MB of mostly garbage: the
 * process's RSS doubled between the 1,000th task and the last while nothing was kept per task
 * (perf jobs, `coordinator_rss_growth` 1.5–2.0). At 100 % the same job ended at 1.2 and spent no
 * more CPU per task; at 50 %, 1.16 but 20 % more CPU. The flag is process-wide, which is what a
 * coordinator process is; V8 reads it each time it sizes the heap after a collection, so setting
 * it at start takes effect.
 */
export function limitHeapGrowth(percent: number): void {
  if (!Number.isInteger(percent) || percent < 0) {
    throw new RangeError(`heap growth percent must be an integer >= 0 (got ${percent})`);
  }
  if (percent > 0) v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}
