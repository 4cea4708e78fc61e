import { type JobEvent__Output } from '@troupe/proto';
import { SingleBar } from 'cli-progress';
import { type CliIo, println } from './cli-io';
import { formatDuration, formatPercent, formatUsd } from './format';
import { type JobProgressView, ProgressTracker } from './progress-tracker';

/** How a watch shows progress. */
export type ProgressMode = 'bar' | 'lines' | 'json' | 'none';

/**
 * Shows a job's progress while its events arrive: a progress bar with done/total, pass rate,
 * running tasks, spend and ETA on a terminal (stderr); one line per finished task otherwise; or
 * each event as a JSON line on stdout (`--json`).
 */
export class ProgressDisplay {
  readonly tracker = new ProgressTracker();
  private bar?: SingleBar;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly io: CliIo,
    private readonly mode: ProgressMode,
  ) {}

  /** Takes one event. */
  add(e: JobEvent__Output): void {
    this.tracker.add(e);
    const v = this.tracker.view();
    switch (this.mode) {
      case 'json':
        println(this.io.stdout, JSON.stringify(eventJson(e)));
        break;
      case 'lines':
        if (
          e.type === 'TASK_GRADED' ||
          e.type === 'TASK_FINISHED' ||
          e.type === 'TASK_RETRY' ||
          e.type === 'LOG' ||
          e.type.startsWith('JOB_')
        ) {
          println(this.io.stderr, `[${v.done}/${v.total}] ${e.message}`);
        }
        break;
      case 'bar':
        this.render(v);
        break;
      case 'none':
        break;
    }
  }

  /** Removes the bar (leaving its last state on screen). */
  stop(): void {
    clearInterval(this.timer);
    this.bar?.stop();
    this.bar = undefined;
  }

  private render(v: JobProgressView): void {
    const payload = {
      pass: formatPercent(v.passRate),
      running: String(v.running),
      spend: formatUsd(v.spendUsd),
      eta: v.etaMs === undefined ? '-' : formatDuration(v.etaMs),
    };
    if (!this.bar) {
      this.bar = new SingleBar({
        format:
          '{bar} {value}/{total} done | pass {pass} | running {running} | {spend} | ETA {eta}',
        stream: this.io.stderr,
        hideCursor: true,
        barsize: 30,
        clearOnComplete: false,
        noTTYOutput: false,
        fps: 5,
      });
      this.bar.start(Math.max(1, v.total), v.done, payload);
      // ETA keeps counting down between events.
      this.timer = setInterval(() => {
        const now = this.tracker.view();
        this.bar?.update(now.done, {
          ...payload,
          eta: now.etaMs === undefined ? '-' : formatDuration(now.etaMs),
        });
      }, 1_000);
      this.timer.unref();
      return;
    }
    this.bar.setTotal(Math.max(1, v.total));
    this.bar.update(v.done, payload);
  }
}

/** An event for machines: the payload decoded. */
export function eventJson(e: JobEvent__Output): Record<string, unknown> {
  let payload: unknown = undefined;
  if (e.payloadJson) {
    try {
      payload = JSON.parse(e.payloadJson) as unknown;
    } catch {
      payload = e.payloadJson;
    }
  }
  return {
    sequence: e.sequence,
    jobId: e.jobId,
    type: e.type,
    timeUnixMs: e.timeUnixMs,
    ...(e.taskId ? { taskId: e.taskId } : {}),
    ...(payload !== undefined ? { payload } : {}),
    message: e.message,
  };
}

/** The display mode for a command: JSON when asked, a bar on a terminal, lines otherwise. */
export function progressMode(io: CliIo, json: boolean): ProgressMode {
  if (json) return 'json';
  return io.stderr.isTTY ? 'bar' : 'lines';
}
