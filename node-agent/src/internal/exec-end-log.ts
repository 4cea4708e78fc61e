import type Docker from 'dockerode';
import type { Logger } from '@troupe/proto';
import { followDockerEvents } from '../docker-events';
import { TroupeLabel } from '../labels';

/** Exec ends kept (the oldest go first): far more than a node runs commands in a restart. */
const KEPT_ENDS = 20_000;

/**
 * The exit codes of the execs that ended in Troupe's sandboxes on this daemon, from its
 * `exec_die` events. A daemon that restarts forgets its execs, so an exec whose end could not be
 * read before it went down has no other record: a command that exited 0 just as the daemon
 * stopped was taken for lost and run again (chaos `docker-restart`, seed 45045). The daemon
 * sends the event as the command exits, before its shutdown closes the stream.
 */
export class ExecEndLog {
  private readonly ends = new Map<string, number>();
  private stop: (() => void) | undefined;
  private starting: Promise<void> | undefined;

  constructor(
    private readonly docker: Docker,
    private readonly log: Logger,
  ) {}

  /** Follows the events from now on (idempotent; a failed start is tried again next call). */
  async start(): Promise<void> {
    if (this.stop) return;
    this.starting ??= followDockerEvents(
      this.docker,
      { events: ['exec_die'], labels: [`${TroupeLabel.MANAGED}=true`] },
      (e) => {
        const attrs = e.Actor?.Attributes ?? {};
        const execId = attrs['execID'];
        const exitCode = Number(attrs['exitCode']);
        if (execId === undefined || !Number.isInteger(exitCode)) return;
        this.ends.set(execId, exitCode);
        if (this.ends.size > KEPT_ENDS) {
          this.ends.delete(this.ends.keys().next().value as string);
        }
      },
      (err, line) => this.log.warn({ err, line }, 'skipped a Docker event that could not be read'),
    ).then(
      (stop) => {
        this.stop = stop;
      },
      (err: unknown) => {
        this.starting = undefined;
        this.log.warn({ err }, 'could not follow Docker’s exec events (trying again later)');
      },
    );
    await this.starting;
  }

  /** The exit code Docker reported for exec `execId`, if it did. */
  exitCodeOf(execId: string): number | undefined {
    return this.ends.get(execId);
  }

  /** Stops following. */
  close(): void {
    this.stop?.();
    this.stop = undefined;
    this.starting = undefined;
  }
}
