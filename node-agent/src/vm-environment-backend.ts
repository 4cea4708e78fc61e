import { access } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import os from 'node:os';
import {
  delay,
  ErrorCode,
  invalidArgument,
  type Logger,
  noopLogger,
  parseWith,
  throwIfAborted,
  TroupeError,
} from '@troupe/proto';
import { z } from 'zod';
import {
  type CreateEnvironmentOptions,
  type Environment,
  type EnvironmentBackend,
  type EnvironmentSpec,
  GOLDEN_SNAPSHOT,
} from './environment';
import type { AgentChannel } from './internal/agent-channel';
import { AgentEnvironment } from './internal/agent-environment';
import { Gate } from './internal/gate';
import { randomId } from './internal/ids';
import { type VmImage, VmMachine } from './internal/vm-machine';
import { VmWarmSet } from './internal/vm-warm-set';

/** Validated settings of a {@link VmEnvironmentBackend}. */
export const VmEnvironmentBackendConfigSchema = z
  .object({
    /** Where `deploy/images/build-vm.sh` puts images. @default '/var/lib/troupe/vm-images' */
    imageDir: z.string().min(1).default('/var/lib/troupe/vm-images'),
    /** Per-VM directories (overlay, sockets, console log, record). @default `<tmpdir>/troupe-vms` */
    stateDir: z
      .string()
      .min(1)
      .default(() => join(os.tmpdir(), 'troupe-vms')),
    /** @default 'qemu-system-x86_64' */
    qemuBinary: z.string().min(1).default('qemu-system-x86_64'),
    /** @default 'qemu-img' */
    qemuImgBinary: z.string().min(1).default('qemu-img'),
    /** The accelerator (from {@link probeAccel}). @default 'tcg' */
    accel: z.enum(['kvm', 'tcg']).default('tcg'),
    /** Deadline for a booting guest's agent, display and window manager. @default 240000 */
    readyTimeoutMs: z.int().min(1_000).default(240_000),
    /** VMs booting at the same time (a TCG boot keeps a core busy). @default 1 */
    maxBoots: z.int().min(1).max(64).default(1),
    /** Live VMs (handed out and warm) at most. @default 4 */
    maxLive: z.int().min(1).max(1_024).default(4),
    /** Booted VMs kept ready at the golden snapshot for specs of the default size. @default 0 */
    warm: z.int().min(0).max(64).default(0),
    /** The spec warm VMs are booted with. */
    warmSpec: z
      .object({
        width: z.int().default(1280),
        height: z.int().default(800),
        memoryMb: z.int().default(1024),
        cpus: z.number().default(1),
      })
      .strict()
      .prefault({}),
    /** TCG translation cache per VM (QEMU's default is 1 GiB of RSS per VM). @default 64 */
    tcgCacheMb: z.int().min(8).max(2_048).default(64),
  })
  .strict();

/** Validated settings of a {@link VmEnvironmentBackend}. */
export type VmEnvironmentBackendConfig = z.output<typeof VmEnvironmentBackendConfigSchema>;

/** Options of {@link VmEnvironmentBackend}. */
export interface VmEnvironmentBackendOptions extends z.input<
  typeof VmEnvironmentBackendConfigSchema
> {
  /** Owner of warm VMs (cluster and host of the records). */
  owner?: { cluster: string; host: string };
  /** Logger. @default a logger that drops everything */
  logger?: Logger;
}

const PingSchema = z.object({ width: z.number(), height: z.number(), wm: z.boolean() });

/**
 * The memory-aware cap on live VMs: what is left after `reserveMb` for the host, divided by a
 * VM's memory plus QEMU's own overhead (TCG cache, device state), never below 1.
 */
export function vmCapacity(
  hostMemMb: number,
  vmMemoryMb: number,
  options: { reserveMb?: number; overheadMb?: number } = {},
): number {
  const reserve = options.reserveMb ?? 2_048;
  const overhead = options.overheadMb ?? 160;
  return Math.max(1, Math.floor((hostMemMb - reserve) / (vmMemoryMb + overhead)));
}

/**
 * The `vm` environment kind: a QEMU guest (KVM where the probe booted, TCG otherwise) booted from
 * an image built offline by `deploy/images/build-vm.sh` — the `troupe-desktop` root filesystem on
 * a read-only qcow2 base, one qcow2 overlay per environment — with no network device. The same
 * in-guest agent as the `desktop` kind answers on a virtio-serial port; snapshots are QEMU's
 * internal snapshots of the whole machine (`savevm`/`loadvm`), so `restore` and `reset` put back
 * disk, memory and running applications without a reboot. Every QEMU process and overlay is
 * recorded under `stateDir` for the {@link VmReaper}.
 */
export class VmEnvironmentBackend implements EnvironmentBackend {
  readonly kind = 'vm' as const;
  /** Validated settings. */
  readonly config: VmEnvironmentBackendConfig;
  private readonly log: Logger;
  private readonly live = new Set<Environment>();
  private readonly boots: Gate;
  private readonly slots: Gate;
  private readonly warmSet: VmWarmSet | undefined;
  private readonly booting = new Set<Promise<unknown>>();

  constructor(options: VmEnvironmentBackendOptions) {
    const { logger, owner, ...rest } = options;
    this.config = parseWith(VmEnvironmentBackendConfigSchema, rest, { prefix: 'options' });
    this.log = (logger ?? noopLogger).child({ component: 'vm-environment-backend' });
    this.boots = new Gate(this.config.maxBoots);
    this.slots = new Gate(this.config.maxLive);
    if (this.config.warm > 0) {
      const { width, height, memoryMb, cpus } = this.config.warmSpec;
      this.warmSet = new VmWarmSet({
        size: Math.min(this.config.warm, this.config.maxLive),
        spec: { width, height, memoryMb, cpus },
        boot: (signal) =>
          this.boot(
            {
              image: 'vm-desktop',
              width,
              height,
              memoryMb,
              cpus,
              pidsLimit: 512,
              labels: {
                cluster: owner?.cluster ?? 'default',
                host: owner?.host ?? os.hostname(),
                actor: 'pool',
                job: '',
              },
            },
            signal,
          ),
        logger: this.log,
      });
    }
  }

  /** Environments created by this instance and not destroyed yet (warm ones included). */
  get size(): number {
    return this.live.size;
  }

  /** Warm VMs waiting now. */
  get warmCount(): number {
    return this.warmSet?.size ?? 0;
  }

  /** Starts filling the warm set (boots one VM at a time under the boot cap). */
  startWarm(): void {
    this.warmSet?.start();
  }

  /** Resolves once the warm set is full (for tests and benchmarks). */
  async waitWarm(options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.warmSet?.waitFull(options.signal);
  }

  /** Checks that the VM image named by `image` is built. */
  async prepare(image: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    throwIfAborted(options.signal);
    await this.resolveImage(image);
  }

  private async resolveImage(image: string): Promise<VmImage> {
    let dir: string;
    if (isAbsolute(image)) dir = image;
    else if (/^troupe-desktop(:[A-Za-z0-9._-]+)?$/.test(image))
      dir = join(this.config.imageDir, 'vm-desktop');
    else if (/^vm-[a-z0-9][a-z0-9-]*$/.test(image)) dir = join(this.config.imageDir, image);
    else {
      throw invalidArgument(
        'spec.image',
        'must name a VM image (vm-<name>, troupe-desktop[:tag] for vm-desktop, or an absolute directory)',
        image,
      );
    }
    const files: VmImage = {
      kernel: join(dir, 'vmlinuz'),
      initrd: join(dir, 'initrd.img'),
      disk: join(dir, 'disk.qcow2'),
    };
    for (const f of [files.kernel, files.initrd, files.disk]) {
      const present = await access(f).then(
        () => true,
        () => false,
      );
      if (!present) {
        throw new TroupeError(
          ErrorCode.NOT_FOUND,
          `VM image ${image}: ${f} is missing; build it with deploy/images/build-vm.sh`,
          { details: { field: 'spec.image', image } },
        );
      }
    }
    return files;
  }

  async create(
    spec: EnvironmentSpec,
    options: CreateEnvironmentOptions = {},
  ): Promise<Environment> {
    const { signal } = options;
    throwIfAborted(signal);
    const warm = this.warmSet?.matches(spec) ? this.warmSet.take() : undefined;
    if (warm) {
      try {
        // A warm VM may have been used before it was parked; the golden state is the contract.
        await warm.reset({ signal });
        this.log.info({ environment: warm.id, actor: spec.labels.actor }, 'warm VM handed out');
        return warm;
      } catch (err) {
        this.log.warn(
          { err, environment: warm.id },
          'warm VM failed its reset: booting a fresh one',
        );
        await warm.destroy().catch(() => undefined);
      }
    }
    return this.boot(spec, signal);
  }

  /** Boots a VM under the live and boot caps, waits until it is ready and takes the golden snapshot. */
  private boot(spec: EnvironmentSpec, signal?: AbortSignal): Promise<Environment> {
    const p = this.doBoot(spec, signal);
    this.booting.add(p);
    void p.finally(() => this.booting.delete(p)).catch(() => undefined);
    return p;
  }

  private async doBoot(spec: EnvironmentSpec, signal?: AbortSignal): Promise<Environment> {
    const image = await this.resolveImage(spec.image);
    const releaseSlot = await this.slots.acquire(signal);
    let machine: VmMachine | undefined;
    const id = randomId('env').slice(0, 16);
    const log = this.log.child({ environment: id, actor: spec.labels.actor });
    try {
      const releaseBoot = await this.boots.acquire(signal);
      const started = Date.now();
      try {
        machine = await VmMachine.launch({
          id,
          dir: join(this.config.stateDir, id),
          image,
          accel: this.config.accel,
          memoryMb: spec.memoryMb,
          cpus: spec.cpus,
          screen: { width: spec.width, height: spec.height },
          owner: {
            cluster: spec.labels.cluster,
            host: spec.labels.host,
            actor: spec.labels.actor,
            job: spec.labels.job,
          },
          qemuBinary: this.config.qemuBinary,
          qemuImgBinary: this.config.qemuImgBinary,
          tcgCacheMb: this.config.tcgCacheMb,
          log,
          ...(signal ? { signal } : {}),
        });
        await this.waitReady(machine.channel as AgentChannel, spec, signal);
      } finally {
        releaseBoot();
      }
      const vm = machine;
      const env: AgentEnvironment = new AgentEnvironment({
        id,
        kind: 'vm',
        backendId: `qemu:${vm.pid}`,
        screen: { width: spec.width, height: spec.height },
        channel: vm.channel as AgentChannel,
        snapshots: vm.snapshots,
        teardown: async (abort) => {
          try {
            await vm.stop(abort);
          } finally {
            this.live.delete(env);
            releaseSlot();
          }
        },
      });
      this.live.add(env);
      await env.snapshot(GOLDEN_SNAPSHOT, signal ? { signal } : {});
      log.info(
        { accel: this.config.accel, bootMs: Date.now() - started, pid: vm.pid },
        'VM environment ready',
      );
      return env;
    } catch (err) {
      await machine?.stop().catch(() => undefined);
      releaseSlot();
      log.warn({ err }, 'VM environment creation failed');
      if (err instanceof TroupeError) throw err;
      throw new TroupeError(
        ErrorCode.UNAVAILABLE,
        `create VM environment for ${spec.labels.actor}`,
        {
          cause: err,
        },
      );
    }
  }

  /** Waits until the agent answers, the display has the asked size and a window manager runs. */
  private async waitReady(
    channel: AgentChannel,
    spec: EnvironmentSpec,
    signal?: AbortSignal,
  ): Promise<void> {
    const timeout = AbortSignal.timeout(this.config.readyTimeoutMs);
    const wait = signal ? AbortSignal.any([signal, timeout]) : timeout;
    for (;;) {
      const reply = PingSchema.parse(await channel.request('ping', {}, wait));
      if (reply.width !== spec.width || reply.height !== spec.height) {
        throw new TroupeError(
          ErrorCode.INTERNAL,
          `the display is ${reply.width}x${reply.height}, not the ${spec.width}x${spec.height} asked`,
        );
      }
      if (reply.wm) return;
      await delay(100, wait);
    }
  }

  async close(options: { signal?: AbortSignal } = {}): Promise<void> {
    this.warmSet?.stop();
    // A boot the warm set started ends (aborted) before the VMs are counted.
    await Promise.allSettled([...this.booting]);
    const envs = [...this.live];
    const results = await Promise.allSettled(envs.map((e) => e.destroy(options)));
    const failed = results.filter((r) => r.status === 'rejected').length;
    if (failed > 0) this.log.warn({ failed }, 'some VMs could not be destroyed on close');
  }
}
