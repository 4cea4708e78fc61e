import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { delay, type Logger, noopLogger, parseWith } from '@troupe/proto';
import { z } from 'zod';
import { PeriodicSweep } from './internal/periodic-sweep';
import {
  listVmDirs,
  processRuns,
  processStartTicks,
  removeVmDir,
  type VmRecord,
} from './internal/vm-records';
import { SandboxLabelsSchema } from './sandbox-spec';

/** Validated settings of a {@link VmReaper}. */
export const VmReaperConfigSchema = z
  .object({
    /** The VM backend's state directory. */
    stateDir: z.string().min(1),
    /** Cluster whose VMs this reaper looks after. */
    cluster: SandboxLabelsSchema.shape.cluster,
    /** Host id whose VMs this reaper looks after (never another host's). */
    host: SandboxLabelsSchema.shape.host,
    /** Pause between periodic sweeps. @default 60000 */
    intervalMs: z.int().min(100).default(60_000),
    /** A directory without a readable record is left alone this long (it may be starting). @default 30000 */
    minAgeMs: z.int().min(0).default(30_000),
  })
  .strict();

/** Validated settings of a {@link VmReaper}. */
export type VmReaperConfig = z.output<typeof VmReaperConfigSchema>;

/** Options of {@link VmReaper}. */
export interface VmReaperOptions extends z.input<typeof VmReaperConfigSchema> {
  logger?: Logger;
}

/** What one VM sweep removed. */
export interface VmReapResult {
  /** Ids of the VMs whose QEMU process was killed or whose directory was removed. */
  vms: string[];
  failures: number;
}

/** Whether the node agent process a record names is still the one that wrote it. */
async function ownerAlive(record: VmRecord): Promise<boolean> {
  const ticks = await processStartTicks(record.ownerPid);
  return ticks !== undefined && ticks === record.ownerStartTicks;
}

/**
 * Removes VMs whose node agent is gone: a VM belongs to the node agent process that started it
 * (its pid and start time are in the VM's record), which destroys it when the environment ends or
 * the process stops. A record whose owner process no longer exists (`kill -9`, a crash) is an
 * orphan: its QEMU process (recognised by `-name troupe-env-<id>` in its command line, so a reused
 * pid is never killed) gets SIGKILL and its directory — overlay with its snapshots, sockets,
 * console log — is deleted. Runs at start and every `intervalMs`.
 */
export class VmReaper {
  readonly config: VmReaperConfig;
  private readonly log: Logger;
  private readonly schedule: PeriodicSweep<VmReapResult>;

  constructor(options: VmReaperOptions) {
    const { logger, ...rest } = options;
    this.config = parseWith(VmReaperConfigSchema, rest, { prefix: 'options' });
    this.log = (logger ?? noopLogger).child({ component: 'vm-reaper', hostId: this.config.host });
    this.schedule = new PeriodicSweep(
      (signal) => this.doSweep(signal),
      this.config.intervalMs,
      this.log,
    );
  }

  /** A first sweep now, then one every `intervalMs` until {@link stop}. */
  start(options: { signal?: AbortSignal } = {}): Promise<VmReapResult> {
    return this.schedule.start(options);
  }

  /** Stops the periodic sweeps and waits for one in flight. */
  stop(): Promise<void> {
    return this.schedule.stop();
  }

  /** One sweep (concurrent calls share it). */
  sweep(options: { signal?: AbortSignal } = {}): Promise<VmReapResult> {
    return this.schedule.sweep(options);
  }

  private async doSweep(signal?: AbortSignal): Promise<VmReapResult> {
    const result: VmReapResult = { vms: [], failures: 0 };
    for (const { dir, record } of await listVmDirs(this.config.stateDir)) {
      signal?.throwIfAborted();
      try {
        if (!record) {
          const age = Date.now() - (await stat(dir)).mtimeMs;
          if (age < this.config.minAgeMs) continue;
          await removeVmDir(dir);
          result.vms.push(dir);
          continue;
        }
        if (record.cluster !== this.config.cluster || record.host !== this.config.host) continue;
        if (await ownerAlive(record)) continue;
        // Before QEMU's pid reached the record, its pidfile has it.
        const pid =
          record.pid ??
          (Number.parseInt(await readFile(join(dir, 'qemu.pid'), 'utf8').catch(() => ''), 10) ||
            null);
        if (pid !== null && (await processRuns(pid, record.name))) {
          process.kill(pid, 'SIGKILL');
          const deadline = Date.now() + 5_000;
          while ((await processRuns(pid, record.name)) && Date.now() < deadline) {
            await delay(20, signal);
          }
        }
        await removeVmDir(dir);
        result.vms.push(record.id);
        this.log.info(
          { vm: record.id, pid: record.pid, actor: record.actor },
          'reaped orphaned VM',
        );
      } catch (err) {
        result.failures += 1;
        this.log.warn({ err, dir }, 'could not reap a VM');
      }
    }
    return result;
  }
}
