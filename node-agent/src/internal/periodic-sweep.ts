import { type Logger, raceSignal } from '@troupe/proto';

/**
 * The schedule of a reaper: a sweep now and then one every `intervalMs` until stopped, at most
 * one sweep at a time (concurrent callers share the one in flight), and a timer that never keeps
 * the process alive. The reapers differ only in what one sweep does.
 */
export class PeriodicSweep<R> {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<R> | undefined;
  private stopped = false;

  constructor(
    private readonly sweepOnce: (signal?: AbortSignal) => Promise<R>,
    private readonly intervalMs: number,
    private readonly log: Logger,
  ) {}

  /** A first sweep now, then one every `intervalMs` until {@link stop}. */
  async start(options: { signal?: AbortSignal } = {}): Promise<R> {
    this.stopped = false;
    const first = await this.sweep(options);
    this.schedule();
    return first;
  }

  /** One sweep (concurrent calls share it; `signal` only ends this caller's wait). */
  sweep(options: { signal?: AbortSignal } = {}): Promise<R> {
    this.running ??= this.sweepOnce(options.signal).finally(() => {
      this.running = undefined;
    });
    return raceSignal(this.running, options.signal);
  }

  /** Stops the periodic sweeps and waits for one in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.running) await this.running.catch(() => undefined);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.sweep()
        .catch((err: unknown) => this.log.warn({ err }, 'periodic sweep failed'))
        .finally(() => this.schedule());
    }, this.intervalMs);
    // A reaper must not keep a process alive on its own.
    this.timer.unref();
  }
}
