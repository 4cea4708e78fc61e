/** Options of {@link PassLoop}. */
export interface PassLoopOptions {
  /** Pause between the end of one pass and the start of the next. */
  intervalMs: number;
  /** One pass. */
  pass: () => Promise<void>;
  /** Told of a pass that failed (the loop goes on). */
  onError: (err: unknown) => void;
}

/**
 * A background job of the leader run in passes (the actor reaper, the job sweeper): one pass
 * every `intervalMs` after the previous one ended, never two at once; the timer does not keep
 * the process alive.
 */
export class PassLoop {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopping = false;

  constructor(private readonly options: PassLoopOptions) {}

  /** Whether {@link stop} was called: a pass in progress should end early. */
  get stopped(): boolean {
    return this.stopping;
  }

  /** Starts the passes (the first after one interval). */
  start(): void {
    this.schedule();
  }

  /** Stops; resolves when a pass in progress has ended. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(): void {
    if (this.stopping) return;
    this.timer = setTimeout(() => {
      this.running = this.options
        .pass()
        .catch(this.options.onError)
        .finally(() => this.schedule());
    }, this.options.intervalMs);
    this.timer.unref();
  }
}
