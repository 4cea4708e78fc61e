import { delay, type Logger, fromAbortSignal } from '@troupe/proto';
import type { Environment, EnvironmentSpec } from '../environment';

/** Options of {@link VmWarmSet}. */
export interface VmWarmSetOptions {
  /** Booted VMs to keep. */
  size: number;
  /** The spec warm VMs are booted with (what {@link VmWarmSet.matches} compares). */
  spec: Pick<EnvironmentSpec, 'width' | 'height' | 'memoryMb' | 'cpus'>;
  /** Boots one ready VM (golden snapshot taken). */
  boot: (signal: AbortSignal) => Promise<Environment>;
  logger: Logger;
}

/**
 * Booted VMs waiting at their golden snapshot, refilled one boot at a time in the background. The
 * sandbox {@link WarmPool} does not fit: its members are containers whose ownership lives in Docker
 * labels, while a VM is owned by the node agent process that recorded it, and a VM is reset by
 * `loadvm golden` rather than recreated.
 */
export class VmWarmSet {
  private readonly idle: Environment[] = [];
  private readonly lifetime = new AbortController();
  private readonly fullWaiters = new Set<() => void>();
  private filling = false;

  constructor(private readonly options: VmWarmSetOptions) {}

  /** Warm VMs waiting now. */
  get size(): number {
    return this.idle.length;
  }

  /** Whether a warm VM can serve `spec` (image aside: warm VMs run the default image). */
  matches(spec: EnvironmentSpec): boolean {
    const w = this.options.spec;
    return (
      /^(troupe-desktop(:latest)?|vm-desktop)$/.test(spec.image) &&
      spec.width === w.width &&
      spec.height === w.height &&
      spec.memoryMb === w.memoryMb &&
      spec.cpus === w.cpus
    );
  }

  /** Hands out a warm VM, if one waits, and starts booting its replacement. */
  take(): Environment | undefined {
    const env = this.idle.shift();
    this.fill();
    return env;
  }

  /** Starts filling. */
  start(): void {
    this.fill();
  }

  /** Resolves when the set is full. */
  waitFull(signal?: AbortSignal): Promise<void> {
    if (this.idle.length >= this.options.size) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = (): void => {
        signal?.removeEventListener('abort', onAbort);
        this.fullWaiters.delete(done);
        resolve();
      };
      const onAbort = (): void => {
        this.fullWaiters.delete(done);
        reject(fromAbortSignal(signal as AbortSignal));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.fullWaiters.add(done);
    });
  }

  /** Stops refilling (the backend destroys the VMs themselves). */
  stop(): void {
    this.lifetime.abort(new Error('shutdown'));
  }

  private fill(): void {
    if (this.filling || this.lifetime.signal.aborted) return;
    this.filling = true;
    void (async () => {
      let pause = 1_000;
      while (this.idle.length < this.options.size && !this.lifetime.signal.aborted) {
        try {
          const env = await this.options.boot(this.lifetime.signal);
          this.idle.push(env);
          pause = 1_000;
          if (this.idle.length >= this.options.size) for (const w of [...this.fullWaiters]) w();
        } catch (err) {
          if (this.lifetime.signal.aborted) break;
          this.options.logger.warn({ err }, 'warm VM boot failed');
          await delay(pause, this.lifetime.signal).catch(() => undefined);
          pause = Math.min(30_000, pause * 2);
        }
      }
      this.filling = false;
    })();
  }
}
