import type Docker from 'dockerode';
import { retryWithBackoff } from '@troupe/proto';

/** A Docker engine event, as much of it as Troupe reads. */
export interface DockerEvent {
  Action?: string;
  Actor?: { ID?: string; Attributes?: Record<string, string> };
}

/** `timeNano` as written on the wire: past 2^53, so not read as a JSON number. */
const TIME_NANO = /"timeNano":\s*(\d+)/;

/** Events remembered to drop the repeats of a replay: far more than a replay's slack holds. */
const RECENT_EVENTS = 4096;
/** How far before the latest event a replay starts (ns). */
const REPLAY_SLACK_NS = 1_000_000_000n;

/** `since` for the events API (seconds, with nine decimals) from a `timeNano`. */
function sinceOf(timeNano: bigint): string {
  const s = timeNano / 1_000_000_000n;
  const ns = timeNano % 1_000_000_000n;
  return `${s}.${ns.toString().padStart(9, '0')}`;
}

/**
 * Follows the Docker engine's container `events` of the given kinds (e.g. `exec_die`) whose
 * container carries every label of `labels` (`key=value`), calling `onEvent` with each parsed
 * event, once each; a line that is not JSON, or an `onEvent` that throws, goes to `onBadEvent`
 * and the following goes on. Resolves once following (rejects when the daemon cannot be asked), with the
 * function that stops it. Its connection does not keep the process alive.
 *
 * The engine ends the stream when its daemon stops (a restart, a chaos fault): it is then
 * followed again, as soon as the daemon answers, from a second before the latest event's time.
 * The engine keeps its recent events, so those written between the two streams are delivered
 * too; the ones the new stream repeats are dropped.
 */
export async function followDockerEvents(
  docker: Docker,
  filter: { events: readonly string[]; labels: readonly string[] },
  onEvent: (e: DockerEvent) => void,
  onBadEvent: (err: unknown, line: string) => void = () => undefined,
): Promise<() => void> {
  const stopping = new AbortController();
  /** The latest `timeNano` delivered. */
  let lastNano: bigint | undefined;
  /** The raw lines of the events delivered lately, oldest first (for the replays' repeats). */
  const recent = new Set<string>();
  let current: (NodeJS.ReadableStream & { destroy?: () => void }) | undefined;

  const deliver = (line: string): void => {
    // Not by time: the engine publishes events from many goroutines, so a stream's times are
    // not in order (two execs started in the same millisecond). Dropping those older than the
    // latest lost one in a busy cluster (chaos seeds 46102, 46205: "Docker reported no
    // execution"). A repeat is the same event written again by a replay: the same line.
    if (recent.has(line)) return;
    recent.add(line);
    if (recent.size > RECENT_EVENTS) recent.delete(recent.values().next().value as string);
    const m = TIME_NANO.exec(line);
    if (m) {
      const nano = BigInt(m[1] as string);
      if (lastNano === undefined || nano > lastNano) lastNano = nano;
    }
    // Runs in the stream's 'data' handler: a line that is not JSON, or a throwing `onEvent`,
    // must cost that one event, never the process (nor the events after it).
    try {
      onEvent(JSON.parse(line) as DockerEvent);
    } catch (err) {
      onBadEvent(err, line);
    }
  };

  const subscribe = async (): Promise<void> => {
    const options: Docker.GetEventsOptions = {
      filters: JSON.stringify({
        type: ['container'],
        event: filter.events,
        label: filter.labels,
      }),
    };
    // The engine takes nanoseconds as decimals (`1765000000.123456789`); the types say number.
    if (lastNano !== undefined) {
      // From a little before the latest event: one published late, out of order, is replayed.
      const since = lastNano > REPLAY_SLACK_NS ? lastNano - REPLAY_SLACK_NS : 0n;
      (options as { since?: string }).since = sinceOf(since);
    }
    const stream = (await docker.getEvents(options)) as NodeJS.ReadableStream & {
      destroy?: () => void;
    };
    if (stopping.signal.aborted) {
      stream.destroy?.();
      return;
    }
    current = stream;
    // A follower for the process's whole life must not keep it from exiting.
    (stream as { socket?: { unref?: () => void } }).socket?.unref?.();
    let buffered = '';
    stream.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (line) deliver(line);
      }
    });
    let ended = false;
    const onEnd = (): void => {
      if (ended || stopping.signal.aborted) return;
      ended = true;
      void resubscribe();
    };
    stream.once('end', onEnd);
    stream.once('close', onEnd);
    stream.once('error', onEnd);
  };

  /** Follows again once the daemon answers; gives up only when stopped. */
  const resubscribe = async (): Promise<void> => {
    await retryWithBackoff(subscribe, {
      isRetryable: () => !stopping.signal.aborted,
      untilMs: Number.POSITIVE_INFINITY,
      // Soon after the daemon answers: it replays from its last 256 events only (of every kind:
      // a sandbox's life is a dozen), so a follower back seconds late on a busy daemon could
      // miss some. A try that cannot connect costs next to nothing.
      maxPauseMs: 250,
      signal: stopping.signal,
      unref: true,
    }).catch(() => undefined);
  };

  await subscribe();
  return () => {
    stopping.abort();
    current?.destroy?.();
  };
}
