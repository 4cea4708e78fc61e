import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { delay, ErrorCode, fromAbortSignal, type Logger, TroupeError } from '@troupe/proto';
import type { EnvironmentSnapshotInfo } from '../environment';
import type { VmAccel } from '../vm-accel';
import { AgentChannel } from './agent-channel';
import type { SnapshotStore } from './agent-environment';
import { qemuArgv, qemuProcessName, type VmImageFiles } from './qemu-argv';
import { QmpClient } from './qmp-client';
import { processStartTicks, removeVmDir, type VmRecord, writeVmRecord } from './vm-records';

const execFileAsync = promisify(execFile);

/** A VM image on disk: kernel, initramfs and the read-only qcow2 base. */
export interface VmImage extends VmImageFiles {
  /** The base disk every overlay points at. */
  disk: string;
}

/** What {@link VmMachine.launch} needs. */
export interface VmLaunchOptions {
  id: string;
  /** The VM's own directory (overlay, sockets, console log, record); created here. */
  dir: string;
  image: VmImage;
  accel: VmAccel;
  memoryMb: number;
  cpus: number;
  screen: { width: number; height: number };
  owner: Pick<VmRecord, 'cluster' | 'host' | 'actor' | 'job'>;
  qemuBinary: string;
  qemuImgBinary: string;
  tcgCacheMb: number;
  log: Logger;
  signal?: AbortSignal;
}

const SNAPSHOT_LINE = /^\s*(\S+)\s+(\S+)\s+([\d.]+)\s+(B|KiB|MiB|GiB|TiB)\s/;
const UNIT: Record<string, number> = {
  B: 1,
  KiB: 2 ** 10,
  MiB: 2 ** 20,
  GiB: 2 ** 30,
  TiB: 2 ** 40,
};

/** Parses HMP `info snapshots` into tags and sizes. */
export function parseSnapshotTable(text: string): EnvironmentSnapshotInfo[] {
  const out: EnvironmentSnapshotInfo[] = [];
  for (const line of text.split(/\r?\n/)) {
    const m = SNAPSHOT_LINE.exec(line);
    if (!m || m[1] === 'ID') continue;
    out.push({
      name: m[2] as string,
      size: Math.round(Number(m[3]) * (UNIT[m[4] as string] ?? 1)),
    });
  }
  return out;
}

/**
 * One running QEMU guest of an environment: its process, its qcow2 overlay, the agent channel
 * (virtio-serial port `troupe.agent` behind a unix socket) and the QMP monitor. Snapshots are
 * QEMU's internal qcow2 snapshots of the whole machine (`savevm`/`loadvm`: disk, memory and
 * devices), so a restore puts back the running applications too, without a reboot.
 */
export class VmMachine {
  private exitInfo: string | undefined;
  private stderrTail = '';
  private readonly exited: Promise<void>;

  private constructor(
    readonly id: string,
    readonly dir: string,
    private readonly child: ChildProcess,
    private readonly log: Logger,
    /** The agent channel, set once connected. */
    public channel: AgentChannel | undefined = undefined,
    private qmp: QmpClient | undefined = undefined,
  ) {
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, sig) => {
        this.exitInfo = `QEMU exited (${sig ?? `code ${String(code)}`})${this.stderrTail ? `: ${this.stderrTail.trim()}` : ''}`;
        this.channel?.close(new TroupeError(ErrorCode.UNAVAILABLE, `VM ${id}: ${this.exitInfo}`));
        this.qmp?.close();
        resolve();
      });
    });
    // QEMU's stderr is a socket pair: a killed QEMU can reset it, which only ends the tail.
    child.stderr?.on('error', () => undefined);
    child.stderr?.on('data', (b: Buffer) => {
      this.stderrTail = (this.stderrTail + b.toString('utf8')).slice(-2_000);
    });
  }

  /** QEMU's pid. */
  get pid(): number {
    return this.child.pid ?? -1;
  }

  /**
   * Creates the overlay, records the VM, starts QEMU and connects to its agent port and monitor.
   * Does not wait for the guest: the agent answers once it has booted.
   */
  static async launch(o: VmLaunchOptions): Promise<VmMachine> {
    const disk = join(o.dir, 'disk.qcow2');
    const record: VmRecord = {
      id: o.id,
      pid: null,
      name: qemuProcessName(o.id),
      ...o.owner,
      ownerPid: process.pid,
      ownerStartTicks: (await processStartTicks(process.pid)) ?? '',
      createdAtMs: Date.now(),
    };
    // The record goes first: a crash from here on leaves something the reaper recognises.
    await writeVmRecord(o.dir, record);
    try {
      await execFileAsync(
        o.qemuImgBinary,
        ['create', '-q', '-f', 'qcow2', '-b', o.image.disk, '-F', 'qcow2', disk],
        { signal: o.signal },
      );
    } catch (err) {
      throw new TroupeError(ErrorCode.UNAVAILABLE, `qemu-img create of the overlay failed`, {
        cause: err,
      });
    }
    const agentSocket = join(o.dir, 'agent.sock');
    const qmpSocket = join(o.dir, 'qmp.sock');
    const argv = qemuArgv({
      id: o.id,
      accel: o.accel,
      memoryMb: o.memoryMb,
      cpus: o.cpus,
      kernel: o.image.kernel,
      initrd: o.image.initrd,
      disk,
      agentSocket,
      qmpSocket,
      consoleLog: join(o.dir, 'console.log'),
      pidFile: join(o.dir, 'qemu.pid'),
      screen: o.screen,
      tcgCacheMb: o.tcgCacheMb,
    });
    // Detached: its own process group, so a signal to the node agent's group does not reach it;
    // the reaper ends it after a crash (by the record), close() otherwise.
    const child = spawn(o.qemuBinary, argv, {
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
    });
    const vm = new VmMachine(o.id, o.dir, child, o.log);
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (err) =>
        reject(
          new TroupeError(ErrorCode.UNAVAILABLE, `cannot start ${o.qemuBinary}`, { cause: err }),
        ),
      );
    });
    child.unref();
    (child.stderr as unknown as { unref?: () => void } | null)?.unref?.();
    await writeVmRecord(o.dir, { ...record, pid: vm.pid });
    try {
      const socket = await vm.connectWhenListening(agentSocket, o.signal);
      vm.channel = AgentChannel.overSocket(socket, `VM ${o.id}`);
      // QEMU opens its chardevs one after another: the agent's listening says nothing of QMP's.
      vm.qmp = await QmpClient.attach(await vm.connectWhenListening(qmpSocket, o.signal), o.signal);
    } catch (err) {
      await vm.stop();
      throw err;
    }
    return vm;
  }

  /** QEMU creates its sockets a moment after it starts: retry until it listens or exits. */
  private async connectWhenListening(path: string, signal?: AbortSignal): Promise<Socket> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (this.exitInfo)
        throw new TroupeError(ErrorCode.UNAVAILABLE, `VM ${this.id}: ${this.exitInfo}`);
      if (signal?.aborted) throw fromAbortSignal(signal);
      try {
        return await new Promise<Socket>((resolve, reject) => {
          const s = connect(path);
          s.once('connect', () => {
            s.removeListener('error', reject);
            // Errors after this surface as 'close', which the channel handles.
            s.on('error', () => undefined);
            resolve(s);
          });
          s.once('error', reject);
        });
      } catch (err) {
        if (Date.now() > deadline) {
          throw new TroupeError(ErrorCode.UNAVAILABLE, `VM ${this.id}: no socket ${path}`, {
            cause: err,
          });
        }
        await delay(20, signal);
      }
    }
  }

  private monitor(): QmpClient {
    if (!this.qmp || this.exitInfo) {
      throw new TroupeError(
        ErrorCode.UNAVAILABLE,
        `VM ${this.id}: ${this.exitInfo ?? 'no monitor'}`,
      );
    }
    return this.qmp;
  }

  /** The machine's snapshots: `savevm`, `loadvm`, `info snapshots`. */
  readonly snapshots: SnapshotStore = {
    save: async (name, signal) => {
      await this.monitor().hmp(`savevm ${name}`, signal);
      const info = (await this.list(signal)).find((s) => s.name === name);
      if (!info)
        throw new TroupeError(ErrorCode.INTERNAL, `VM ${this.id}: savevm ${name} left no snapshot`);
      return info;
    },
    restore: async (name, signal) => {
      if (!(await this.list(signal)).some((s) => s.name === name)) {
        throw new TroupeError(ErrorCode.NOT_FOUND, `no snapshot ${name}`, {
          details: { field: 'name', name },
        });
      }
      await this.monitor().hmp(`loadvm ${name}`, signal);
    },
    list: async (signal) => (await this.list(signal)).map((s) => s.name),
  };

  private async list(signal?: AbortSignal): Promise<EnvironmentSnapshotInfo[]> {
    return parseSnapshotTable(await this.monitor().hmp('info snapshots', signal));
  }

  /** Ends QEMU (`quit`, then SIGKILL) and removes the VM's directory. Idempotent. */
  async stop(signal?: AbortSignal): Promise<void> {
    this.channel?.close();
    if (!this.exitInfo) {
      await this.qmp?.execute('quit', undefined, AbortSignal.timeout(2_000)).catch(() => undefined);
      const wait = new AbortController();
      const quit = await Promise.race([
        this.exited.then(() => true),
        delay(3_000, signal ? AbortSignal.any([signal, wait.signal]) : wait.signal).then(
          () => false,
          () => false,
        ),
      ]);
      wait.abort();
      if (!quit) {
        this.child.kill('SIGKILL');
        await this.exited;
      }
    }
    this.qmp?.close();
    await removeVmDir(this.dir);
    this.log.debug({ vm: this.id }, 'VM stopped');
  }
}
