import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { delay, type Logger, noopLogger, parseWith } from '@troupe/proto';
import { z } from 'zod';
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
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<VmReapResult> | undefined;
  private stopped = false;

  constructor(options: VmReaperOptions) {
    const { logger, ...rest } = options;
    this.config = parseWith(VmReaperConfigSchema, rest, { prefix: 'options' });
    this.log = (logger ?? noopLogger).child({ component: 'vm-reaper', hostId: this.config.host });
  }

  /** A first sweep now, then one every `intervalMs` until {@link stop}. */
  async start(options: { signal?: AbortSignal } = {}): Promise<VmReapResult> {
    this.stopped = false;
    const first = await this.sweep(options);
    this.schedule();
    return first;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.sweep()
        .catch((err: unknown) => this.log.warn({ err }, 'periodic VM sweep failed'))
        .finally(() => this.schedule());
    }, this.config.intervalMs);
    this.timer.unref();
  }

  /** Stops the periodic sweeps and waits for one in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.running) await this.running.catch(() => undefined);
  }

  /** One sweep (concurrent calls share it). */
  sweep(options: { signal?: AbortSignal } = {}): Promise<VmReapResult> {
    this.running ??= this.doSweep(options.signal).finally(() => {
      this.running = undefined;
    });
    return this.running;
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
