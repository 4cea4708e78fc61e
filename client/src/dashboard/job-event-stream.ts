import { type ServerResponse } from 'node:http';
import { TroupeError, type JobEvent__Output } from '@troupe/proto';
import { type DashboardApi } from './dashboard-api';
import { serveSse } from './sse';

/** A job event as the browser receives it (`data:` of an SSE message, `id:` its sequence). */
export interface BrowserJobEvent {
  seq: number;
  type: string;
  taskId: string;
  timeMs: number;
  message: string;
  payload: unknown;
}

function toBrowser(e: JobEvent__Output): BrowserJobEvent {
  let payload: unknown = null;
  try {
    payload = e.payloadJson ? JSON.parse(e.payloadJson) : null;
  } catch {
    payload = e.payloadJson;
  }
  return {
    seq: e.sequence,
    type: String(e.type),
    taskId: e.taskId,
    timeMs: e.timeUnixMs,
    message: e.message,
    payload,
  };
}

/** Where a stream starts: after `Last-Event-ID` (a reconnect) or after `?after=` (a first load). */
export function resumeSequence(lastEventId: string | undefined, after: string | null): number {
  for (const v of [lastEventId, after]) {
    if (v !== undefined && v !== null && /^\d{1,15}$/.test(v)) return Number(v) + 1;
  }
  return 1;
}

/** Most events a first load may ask for (`?tail=`). */
export const MAX_EVENT_TAIL = 10_000;

/** `?tail=N` of a first load: 0 when absent; INVALID_ARGUMENT naming it when not 1…10,000. */
export function eventTail(tail: string | null): number {
  if (tail === null) return 0;
  const n = /^\d{1,6}$/.test(tail) ? Number(tail) : NaN;
  if (!(n >= 1 && n <= MAX_EVENT_TAIL)) {
    throw new TroupeError(
      'INVALID_ARGUMENT',
      `tail: must be an integer from 1 to ${MAX_EVENT_TAIL}`,
      {
        details: { field: 'tail', rule: `integer from 1 to ${MAX_EVENT_TAIL}` },
      },
    );
  }
  return n;
}

/** What {@link streamJobEvents} needs. */
export interface JobEventStreamOptions {
  api: DashboardApi;
  jobId: string;
  /** First sequence to send. */
  fromSequence: number;
  /** With `fromSequence` 1: start with the job's last `tail` events. @default 0 (all) */
  tail?: number;
  res: ServerResponse;
  /** Aborted when the browser goes away or the server stops. */
  signal: AbortSignal;
  /** Comment line interval that keeps proxies from closing an idle stream. @default 15000 */
  keepAliveMs?: number;
}

/**
 * Streams a job's events as server-sent events: `id:` is the job's event sequence, so a browser's
 * `EventSource` that reconnects sends `Last-Event-ID` and gets the events after it — no gap and no
 * duplicate, because the job API replays its event log from any sequence. After `JOB_FINISHED` an
 * `end` event tells the page to stop reconnecting.
 */
export async function streamJobEvents(options: JobEventStreamOptions): Promise<void> {
  const { signal } = options;
  await serveSse({ ...options, retryMs: 1_000 }, async (send) => {
    for await (const e of options.api.watch(options.jobId, {
      fromSequence: options.fromSequence,
      ...(options.tail ? { tail: options.tail } : {}),
      signal,
    })) {
      const b = toBrowser(e);
      send({ id: b.seq, event: 'job', data: b });
      if (b.type === 'JOB_FINISHED') {
        send({ event: 'end', data: {} });
        break;
      }
    }
  });
}
