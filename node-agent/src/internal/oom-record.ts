import type Docker from 'dockerode';
import { dockerError } from './docker-errors';

/** The window of one command, in wall-clock milliseconds since the epoch (Docker's clock). */
export interface OomWindow {
  /** Taken just before the exec was created. */
  sinceMs: number;
  /** Taken once its end was observed. */
  untilMs: number;
  /**
   * Extra time to wait for an `oom` event the engine has not published yet: the kernel signals
   * the OOM before the victim dies, but containerd reports the two on separate paths.
   */
  graceMs: number;
  signal?: AbortSignal;
}

/** Docker's `since`/`until` take seconds, with a fraction. */
const seconds = (ms: number): number => Math.round(ms) / 1000;

/**
 * Whether Docker recorded an `oom` event for the container inside the window. This reads the
 * engine's own record: it never runs anything in the container, whose memory may still be full
 * (a tmpfs stays charged after the OOM killer ran), so an exec there could itself be killed.
 */
export async function oomEventBetween(
  docker: Docker,
  containerId: string,
  window: OomWindow,
): Promise<boolean> {
  let stream: NodeJS.ReadableStream & { destroy?: () => void };
  try {
    stream = await docker.getEvents({
      since: seconds(window.sinceMs),
      until: seconds(window.untilMs + window.graceMs),
      filters: JSON.stringify({ type: ['container'], container: [containerId], event: ['oom'] }),
      abortSignal: window.signal,
    });
  } catch (err) {
    throw dockerError(`read the oom events of container ${containerId}`, err);
  }
  try {
    // The engine filters to `oom` events: any event at all is the answer.
    return await new Promise<boolean>((resolve, reject) => {
      stream.on('data', (chunk: Buffer) => {
        if (chunk.toString().trim().length > 0) resolve(true);
      });
      stream.once('end', () => resolve(false));
      stream.once('close', () => resolve(false));
      stream.once('error', (err) =>
        reject(dockerError(`read the oom events of container ${containerId}`, err)),
      );
    });
  } finally {
    stream.destroy?.();
  }
}
