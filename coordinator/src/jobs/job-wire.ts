import {
  type Job,
  type JobAggregate,
  type JobEvent,
  type JobResults,
  type Node,
  type TaskResult,
} from '@troupe/proto';
import { type HostRecord } from '../host-registry';
import { type JobEventRecord } from './job-event';
import { type JobResultsView } from './job-manager';
import { type JobAggregateRecord, type JobRecord } from './job-record';

// Conversions from the job manager's records to the generated gRPC message types.

/** A job record as the wire `Job`. */
export function toWireJob(r: JobRecord): Job {
  return {
    jobId: r.jobId,
    name: r.name,
    kind: r.kind,
    state: r.state,
    reason: r.reason,
    labels: r.labels,
    createdUnixMs: r.createdUnixMs,
    ...(r.startedUnixMs !== undefined ? { startedUnixMs: r.startedUnixMs } : {}),
    ...(r.finishedUnixMs !== undefined ? { finishedUnixMs: r.finishedUnixMs } : {}),
    progress: r.progress,
    specJson: r.specJson,
  };
}

/** An aggregate as the wire `JobAggregate`. */
export function toWireAggregate(a: JobAggregateRecord): JobAggregate {
  return {
    total: a.total,
    passed: a.passed,
    failed: a.failed,
    errored: a.errored,
    timedOut: a.timedOut,
    cancelled: a.cancelled,
    pending: a.pending,
    ...(a.passRate !== undefined ? { passRate: a.passRate } : {}),
    costUsd: a.costUsd,
    promptTokens: a.promptTokens,
    completionTokens: a.completionTokens,
    wallMs: a.wallMs,
    extraJson: a.extra ? JSON.stringify(a.extra) : '',
  };
}

/** Results as the wire `JobResults`. */
export function toWireResults(v: JobResultsView): JobResults {
  return {
    jobId: v.jobId,
    state: v.state,
    aggregate: toWireAggregate(v.aggregate),
    tasks: v.tasks.map((t): TaskResult => ({
      taskId: t.taskId,
      status: t.status,
      ...(t.score !== undefined ? { score: t.score } : {}),
      attempts: t.attempts,
      costUsd: t.costUsd,
      tokens: t.tokens,
      durationMs: t.durationMs,
      stopReason: t.stopReason,
      error: t.error,
      artifacts: t.artifacts,
      detailsJson: t.details ? JSON.stringify(t.details) : '',
    })),
    nextPageToken: v.nextPageToken,
  };
}

/** An event as the wire `JobEvent`. */
export function toWireEvent(e: JobEventRecord): JobEvent {
  return {
    sequence: e.sequence,
    jobId: e.jobId,
    type: e.type,
    timeUnixMs: e.timeUnixMs,
    taskId: e.taskId,
    payloadJson: e.payload ? JSON.stringify(e.payload) : '',
    message: e.message,
  };
}

const NODE_STATE = { ALIVE: 'NODE_READY', DRAINING: 'NODE_DRAINING', DEAD: 'NODE_DEAD' } as const;

/** A host registration as the wire `Node`. */
export function toWireNode(h: HostRecord): Node {
  return {
    hostId: h.info.hostId,
    state: NODE_STATE[h.state],
    kinds: [...h.info.kinds],
    slots: { ...h.info.slots },
    used: { ...h.load },
    cpu: h.info.cpu,
    memMb: h.info.memMb,
    backends: [...h.info.backends],
    labels: { ...h.info.labels },
    lastHeartbeatUnixMs: h.lastHeartbeatUnixMs,
  };
}
