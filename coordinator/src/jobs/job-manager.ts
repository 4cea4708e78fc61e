import { MAX_TASK_FILE_NAME, receiveTaskFile } from './task-file';
import { createHash, randomBytes } from 'node:crypto';
import {
  type AnyActorDefinition,
  type Directory,
  isHostSilent,
  isTransientNatsError,
  type Logger,
  noopLogger,
  type RefFactory,
} from '@troupe/actors';
import {
  ErrorReason,
  hasReason,
  invalidArgument,
  parseWith,
  TroupeError,
  validateJobId,
} from '@troupe/proto';
import { type NatsConnection } from '@nats-io/transport-node';
import { DEFAULT_JOB_POLICY, type JobPolicy } from '../fair-queue';
import { type DriverRegistry } from './driver-registry';
import { createJobActor, type JobActorOptions } from './job-actor';
import { type JobEventRecord } from './job-event';
import { JobEventLog } from './job-event-log';
import {
  aggregateOf,
  type JobAggregateRecord,
  type JobRecord,
  JobRecordSchema,
  recordOf,
} from './job-record';
import { JOB_ACTOR_KIND, type JobRuntime, JobRuntimeHolder, revive } from './job-runtime';
import { type DriverActorRuntime } from './job-driver';
import {
  checkSpecSize,
  jobDisplayName,
  type JobSpec,
  JobSpecSchema,
  maxSpecBytesFor,
  parseSpecTextAsync,
  type SpecTextFormat,
} from './job-spec';
import { emptyJobState, JobStateSchema, positionsOf, type TaskPhase, taskView } from './job-state';
import { jobArtifactPrefix, JobStore } from './job-store';
import { createTaskActor, type TaskActorOptions } from './task-actor';
import { whileTransient } from './while-transient';

/** Paging of {@link JobManager.results}. */
export interface ResultsOptions {
  signal?: AbortSignal;
  pageSize?: number;
  pageToken?: string;
  /** Plan index of the first task when there is no `pageToken`. @default 0 */
  offset?: number;
}

/** What a caller passes to the {@link JobManager} constructor. */
export interface JobManagerOptions {
  /** The job kinds this coordinator can run. */
  drivers: DriverRegistry;
  /** @default no logging */
  logger?: Logger;
  /** Time running tasks get to stop after a cancellation. @default 30000 */
  cancelGraceMs?: number;
  /** Time allowed to grade a timed-out attempt. @default 60000 */
  gradeTimeoutMs?: number;
  /** Options of the job actor kind. */
  jobActor?: JobActorOptions;
  /** Options of the task actor kind. */
  taskActor?: TaskActorOptions;
  /**
   * How often the leader pings the actors of running jobs, which re-activates any whose wake on
   * post was lost (a host that died between a post and its activation).
   * @default 5000
   */
  watchdogMs?: number;
}

/** What {@link JobManager.start} needs once the process is connected. */
export interface JobManagerStartOptions {
  cluster: string;
  nc: NatsConnection;
  /** Refs for asks and posts (the process's actor system). */
  refs: RefFactory;
  /** Host id of this process. */
  hostId: string;
  /** Replicas of the job bucket, events stream and object store. @default 1 */
  replicas?: number;
  /** Whether this process leads the cluster (only the leader runs the watchdog). @default always */
  isLeader?: () => boolean;
  /** The actor directory (the watchdog restarts stopped job actors through it). */
  directory?: Directory;
}

/** What {@link JobManager.delete} deleted. */
export interface DeletedJob {
  /** Task records and results. */
  keys: number;
  /** Events of the job's log. */
  events: number;
  /** Objects under `jobs/<jobId>/`. */
  artifacts: number;
}

/** States of a finished job. */
const FINISHED_STATES: ReadonlySet<string> = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

/** A job submission. */
export interface SubmitJobOptions {
  /** The spec: YAML/JSON text, or an already parsed object. */
  spec: string | Record<string, unknown>;
  /** Encoding of a text spec. @default 'auto' (YAML, which includes JSON) */
  format?: SpecTextFormat;
  /** Makes the submission idempotent (at most 128 characters). */
  idempotencyKey?: string;
  /** Re-run the unfinished tasks of this finished job instead of creating a new one. */
  resumeJobId?: string;
  /** Stops parsing a large spec when the caller gives up (the gRPC call's deadline). */
  signal?: AbortSignal;
}

/** Filters and paging of {@link JobManager.list}. */
export interface ListJobsOptions {
  /** Only these states (wire names); empty = all. */
  states?: readonly string[];
  /** Only jobs carrying all these labels. */
  labels?: Record<string, string>;
  /** @default 50, at most 1000 */
  pageSize?: number;
  /** Token from the previous page. */
  pageToken?: string;
}

/** Wire status names of tasks. */
export type WireTaskStatus =
  | 'TASK_PENDING'
  | 'TASK_RUNNING'
  | 'TASK_PASSED'
  | 'TASK_FAILED'
  | 'TASK_ERRORED'
  | 'TASK_TIMED_OUT'
  | 'TASK_CANCELLED';

const WIRE_TASK_STATUS: Record<TaskPhase, WireTaskStatus> = {
  PENDING: 'TASK_PENDING',
  BACKOFF: 'TASK_PENDING',
  QUEUED: 'TASK_PENDING',
  RUNNING: 'TASK_RUNNING',
  PASSED: 'TASK_PASSED',
  FAILED: 'TASK_FAILED',
  ERRORED: 'TASK_ERRORED',
  TIMED_OUT: 'TASK_TIMED_OUT',
  CANCELLED: 'TASK_CANCELLED',
};

/** One task in {@link JobResultsView}. */
export interface TaskResultView {
  taskId: string;
  status: WireTaskStatus;
  score?: number;
  attempts: number;
  costUsd: number;
  tokens: number;
  durationMs: number;
  stopReason: string;
  error: string;
  artifacts: string[];
  details?: Record<string, unknown>;
}

/** Results of a job: a page of its tasks, and the aggregate. */
export interface JobResultsView {
  jobId: string;
  state: JobRecord['state'];
  aggregate: JobAggregateRecord;
  /** This page's tasks, in plan order. */
  tasks: TaskResultView[];
  /** Token of the next page; empty on the last. */
  nextPageToken: string;
}

/** Tasks of a results page when none is asked for. */
export const DEFAULT_RESULTS_PAGE = 1_000;
/** Most tasks of a results page. */
export const MAX_RESULTS_PAGE = 5_000;

function resultsPageSize(asked: number | undefined): number {
  if (asked === undefined || asked === 0) return DEFAULT_RESULTS_PAGE;
  if (!Number.isInteger(asked) || asked < 0 || asked > MAX_RESULTS_PAGE) {
    throw invalidArgument('page_size', `must be between 0 and ${MAX_RESULTS_PAGE}`, asked);
  }
  return asked;
}

function resultsOffset(asked: number | undefined, pageToken: string | undefined): number {
  if (asked === undefined || asked === 0) return 0;
  if (!Number.isInteger(asked) || asked < 0) {
    throw invalidArgument('offset', 'must be an integer >= 0', asked);
  }
  if (pageToken) {
    throw invalidArgument('offset', 'must be 0 with a page_token (the token says where)', asked);
  }
  return asked;
}

function encodeResultsToken(jobId: string, from: number): string {
  return encodeToken({ j: jobId, i: from });
}

function decodeResultsToken(token: string, jobId: string): number {
  const p = tokenFields(token);
  const i = p?.['i'];
  if (p?.['j'] !== jobId || typeof i !== 'number' || !Number.isInteger(i) || i < 0) {
    throw invalidArgument(
      'page_token',
      `is not a token of job ${jobId}'s results`,
      token.slice(0, 64),
    );
  }
  return i;
}

/** An artifact being read. */
export interface ArtifactReader {
  size: number;
  contentType: string;
  /** The bytes, in order. */
  chunks: AsyncIterable<Uint8Array>;
}

/**
 * The actor kinds the registered drivers contribute ({@link JobDriver.actors}), bound to the job
 * runtime; `ALREADY_EXISTS` naming both owners when a kind is defined twice.
 */
function driverActors(
  drivers: DriverRegistry,
  own: readonly AnyActorDefinition[],
  runtime: () => JobRuntime,
): AnyActorDefinition[] {
  const owners = new Map<string, string>(own.map((d) => [d.kind, 'the job layer']));
  const out: AnyActorDefinition[] = [];
  const bound = (): DriverActorRuntime => {
    const r = runtime();
    const { cluster, hostId, nc, replicas, refs, log } = r;
    return { cluster, hostId, nc, replicas, refs, log };
  };
  for (const name of drivers.names()) {
    for (const def of drivers.get(name).actors?.(bound) ?? []) {
      const owner = owners.get(def.kind);
      if (owner !== undefined) {
        throw new TroupeError(
          'ALREADY_EXISTS',
          `driver '${name}' defines actor kind '${def.kind}', which ${owner} already defines`,
          { details: { field: 'driver.actors', kind: def.kind } },
        );
      }
      owners.set(def.kind, `driver '${name}'`);
      out.push(def);
    }
  }
  return out;
}

const MAX_PAGE_SIZE = 1_000;
const DEFAULT_PAGE_SIZE = 50;

/**
 * The job manager of a coordinator: the job and task actor kinds (to host), and the operations of
 * the job API — submit, get, list, watch, cancel, results, artifacts — over the jobs bucket, the
 * events stream, the object store and the job actors. The gRPC `JobService` is a thin layer over
 * it; in-process users (tests, `troupe dev`) may call it directly.
 */
export class JobManager {
  /** The job and task actor kinds; host them (the coordinator does) before {@link start}. */
  readonly definitions: readonly AnyActorDefinition[];
  readonly drivers: DriverRegistry;
  private readonly holder = new JobRuntimeHolder();
  private readonly log: Logger;
  private readonly policies = new Map<string, JobPolicy>();
  private readonly idsCache = new Map<string, readonly string[]>();
  private started?: JobManagerStartOptions & { store: JobStore; events: JobEventLog };
  private stopWatch?: () => void;
  private watchdog?: NodeJS.Timeout;

  constructor(private readonly options: JobManagerOptions) {
    this.drivers = options.drivers;
    this.log = (options.logger ?? noopLogger).child({ component: 'jobs' });
    const own = [
      createJobActor(this.holder, options.jobActor),
      createTaskActor(this.holder, options.taskActor),
    ];
    this.definitions = [...own, ...driverActors(this.drivers, own, () => this.holder.get())];
  }

  /** Opens the bucket, stream and object store and binds the actors' runtime. */
  async start(options: JobManagerStartOptions): Promise<void> {
    const { nc, cluster } = options;
    const replicas = options.replicas ?? 1;
    const [store, events] = await Promise.all([
      JobStore.open(nc, cluster, { replicas }),
      JobEventLog.open(nc, cluster, { replicas }),
    ]);
    this.holder.bind({
      cluster,
      hostId: options.hostId,
      nc,
      replicas,
      refs: options.refs,
      store,
      events,
      drivers: this.drivers,
      log: this.log,
      cancelGraceMs: this.options.cancelGraceMs ?? 30_000,
      gradeTimeoutMs: this.options.gradeTimeoutMs ?? 60_000,
      ...(options.directory ? { directory: options.directory } : {}),
    });
    this.started = { ...options, store, events };
    // Scheduling policies of jobs (read synchronously by placement) follow the job records.
    const watcher = await store.kv.watch({ key: 'job.>' });
    this.stopWatch = () => watcher.stop();
    void (async () => {
      for await (const e of watcher) {
        const jobId = e.key.slice('job.'.length);
        if (e.operation !== 'PUT') {
          this.policies.delete(jobId);
          continue;
        }
        const parsed = JobRecordSchema.safeParse(e.json());
        if (!parsed.success) continue;
        const r = parsed.data;
        if (r.state === 'SUCCEEDED' || r.state === 'FAILED' || r.state === 'CANCELLED') {
          this.policies.delete(jobId);
        } else {
          this.policies.set(jobId, { priority: r.priority, weight: r.weight });
        }
      }
    })().catch((err: unknown) => this.log.warn({ err }, 'job policy watch stopped'));
    const isLeader = options.isLeader ?? (() => true);
    this.watchdog = setInterval(() => {
      if (isLeader()) this.pingRunningJobs();
    }, this.options.watchdogMs ?? 5_000);
    this.watchdog.unref();
  }

  /** Stops the policy watch and the watchdog (the actors stop with their actor system). */
  stop(): void {
    clearInterval(this.watchdog);
    this.stopWatch?.();
  }

  /** Pings the job actor of every unfinished job (best effort; see the `ping` message). */
  private pingRunningJobs(): void {
    const refs = this.started?.refs;
    if (!refs) return;
    for (const jobId of this.policies.keys()) {
      const addr = { kind: JOB_ACTOR_KIND, id: jobId };
      void revive(this.started?.directory, addr, this.log)
        .then(() =>
          refs
            .refOf(addr)
            .withHints({ jobId })
            .ask('ping', {}, { timeoutMs: 5_000, requireIdle: true }),
        )
        .catch((err: unknown) => this.log.debug({ err, jobId }, 'job watchdog ping failed'));
    }
  }

  /** Scheduling policy of a job, for placement's fair queue. */
  readonly policyOf = (jobId: string): JobPolicy => this.policies.get(jobId) ?? DEFAULT_JOB_POLICY;

  private need(): JobManagerStartOptions & { store: JobStore; events: JobEventLog } {
    if (!this.started) throw new TroupeError('UNAVAILABLE', 'the job manager is not started');
    return this.started;
  }

  /** The job event log (for in-process readers). */
  get events(): JobEventLog {
    return this.need().events;
  }

  /** The job store (for in-process readers). */
  get store(): JobStore {
    return this.need().store;
  }

  /**
   * Validates and persists a spec and queues the job. `INVALID_ARGUMENT` naming the field and the
   * rule when the spec is invalid (an unknown kind lists the known ones), or larger than half the
   * NATS server's `max_payload` (it is stored whole in one message).
   */
  async submit(req: SubmitJobOptions): Promise<JobRecord> {
    const { store, refs, nc } = this.need();
    const maxSpecBytes = maxSpecBytesFor(nc.info?.max_payload);
    const raw =
      typeof req.spec === 'string'
        ? await parseSpecTextAsync(req.spec, req.format, maxSpecBytes, req.signal)
        : req.spec;
    const spec = await this.drivers.validate(raw, {
      readTaskFile: (upload) => store.getTaskFile(upload),
      ...(req.signal ? { signal: req.signal } : {}),
    });
    checkSpecSize(spec, maxSpecBytes);
    const key = req.idempotencyKey ?? '';
    if (key.length > 128) throw invalidArgument('idempotency_key', 'at most 128 characters');
    if (req.resumeJobId) {
      validateJobId(req.resumeJobId);
      const existing = await store.getJob(req.resumeJobId);
      if (!existing) throw new TroupeError('NOT_FOUND', `job ${req.resumeJobId} not found`);
      if (existing.kind !== spec.kind) {
        throw invalidArgument(
          'spec.kind',
          `must be the kind of the job to resume (${existing.kind})`,
          spec.kind,
        );
      }
      if (existing.state === 'QUEUED' || existing.state === 'RUNNING') return existing;
      const tag = key || randomBytes(6).toString('hex');
      await refs
        .refOf({ kind: JOB_ACTOR_KIND, id: req.resumeJobId })
        .withHints({ jobId: req.resumeJobId })
        .post(
          'resume',
          { spec },
          {
            dedupeId: `resume-${req.resumeJobId}-${createHash('sha256').update(tag).digest('hex')}`,
          },
        );
      return { ...existing, state: 'RUNNING', reason: '' };
    }
    let jobId = newJobId();
    if (key) {
      const bound = await store.bindIdempotencyKey(key, jobId);
      if (bound !== jobId) {
        const existing = await store.getJob(bound);
        if (existing) return this.startedOnce(existing);
        if (await store.jobDeleted(bound)) {
          // Its job was deleted but the key stayed bound (a job submitted before `idemof` notes):
          // the key is free again, for a new job (never the deleted id).
          await store.rebindIdempotencyKey(key, jobId);
        } else {
          jobId = bound; // the first submission died before creating its job: finish its work
        }
      }
      await store.noteIdempotencyKey(jobId, key);
    }
    const createdUnixMs = Date.now();
    const record = recordOf(
      { ...emptyJobState(jobId), phase: 'QUEUED', spec, createdUnixMs },
      createdUnixMs,
    );
    try {
      await store.createJob(record);
    } catch (err) {
      const existing = key ? await store.getJob(jobId) : undefined;
      if (existing) return this.startedOnce(existing);
      throw err;
    }
    this.policies.set(jobId, { priority: spec.priority, weight: spec.weight });
    await this.postStart(jobId, spec, createdUnixMs);
    this.log.info({ jobId, kind: spec.kind, name: jobDisplayName(spec) }, 'job submitted');
    return record;
  }

  /** Tells the job's actor to plan and run it (deduplicated: a job starts once). */
  private async postStart(jobId: string, spec: JobSpec, createdUnixMs: number): Promise<void> {
    await this.need()
      .refs.refOf({ kind: JOB_ACTOR_KIND, id: jobId })
      .withHints({ jobId })
      .post('start', { spec, createdUnixMs }, { dedupeId: `start-${jobId}` });
  }

  /**
   * The job a repeated submission (same idempotency key) finds, started: the first submission
   * may have created the record and then failed to post `start` (the inbox stream without a
   * leader after a NATS server loss), and its client retried — the job was answered as
   * submitted but never ran (chaos seed 8016). A job still `QUEUED` gets its `start` again;
   * the post is deduplicated and the job actor ignores a `start` once it has one.
   */
  private async startedOnce(existing: JobRecord): Promise<JobRecord> {
    if (existing.state !== 'QUEUED') return existing;
    const spec = parseWith(JobSpecSchema, JSON.parse(existing.specJson), { prefix: 'spec' });
    this.policies.set(existing.jobId, { priority: spec.priority, weight: spec.weight });
    await this.postStart(existing.jobId, spec, existing.createdUnixMs);
    this.log.info({ jobId: existing.jobId }, 'job submitted again: start posted');
    return existing;
  }

  /**
   * Takes in an uploaded task file (chunks in order, the first naming the file) and keeps it in
   * the cluster's object store under its SHA-256: `INVALID_ARGUMENT` naming `chunks` when it is
   * larger than 64 MiB or not UTF-8, `name` when the name is missing or too
   * long. Its lines are checked when a job names it.
   */
  async uploadTaskFile(
    chunks: AsyncIterable<{ data: Uint8Array; name?: string }>,
  ): Promise<{ upload: string; sizeBytes: number; lines: number; name: string }> {
    const { store } = this.need();
    let name = '';
    const data = async function* (): AsyncGenerator<Uint8Array> {
      for await (const c of chunks) {
        if (!name && c.name) name = c.name;
        yield c.data;
      }
    };
    const received = await receiveTaskFile(data());
    if (!name) throw invalidArgument('name', 'is required (the file name, in the first chunk)');
    if (name.length > MAX_TASK_FILE_NAME) {
      throw invalidArgument('name', `must be at most ${MAX_TASK_FILE_NAME} characters`);
    }
    await store.putTaskFile(received.upload, received.bytes, name);
    this.log.info(
      { upload: received.upload, name, bytes: received.bytes.byteLength, lines: received.lines },
      'task file uploaded',
    );
    return {
      upload: received.upload,
      sizeBytes: received.bytes.byteLength,
      lines: received.lines,
      name,
    };
  }

  /** One job's record; `NOT_FOUND` when there is none. */
  async get(jobId: string): Promise<JobRecord> {
    validateJobId(jobId);
    const r = await this.need().store.getJob(jobId);
    if (!r) throw new TroupeError('NOT_FOUND', `job ${jobId} not found`);
    return r;
  }

  /** Jobs, newest first, filtered and paged. */
  async list(options: ListJobsOptions = {}): Promise<{ jobs: JobRecord[]; nextPageToken: string }> {
    const pageSize =
      options.pageSize === undefined || options.pageSize === 0
        ? DEFAULT_PAGE_SIZE
        : Math.min(MAX_PAGE_SIZE, options.pageSize);
    if (pageSize < 0) throw invalidArgument('page_size', 'must be >= 0', options.pageSize);
    const states = new Set(options.states ?? []);
    const labels = options.labels ?? {};
    const filterHash = createHash('sha256')
      .update(JSON.stringify([[...states].sort(), Object.entries(labels).sort()]))
      .digest('hex')
      .slice(0, 16);
    let after: { c: number; j: string } | undefined;
    if (options.pageToken) after = decodePageToken(options.pageToken, filterHash);
    const all = (await this.need().store.listJobs())
      .filter((r) => states.size === 0 || states.has(r.state))
      .filter((r) => Object.entries(labels).every(([k, v]) => r.labels[k] === v))
      .sort((a, b) => b.createdUnixMs - a.createdUnixMs || (a.jobId < b.jobId ? 1 : -1));
    const start = after
      ? all.findIndex(
          (r) => r.createdUnixMs < after.c || (r.createdUnixMs === after.c && r.jobId < after.j),
        )
      : 0;
    const page = start < 0 ? [] : all.slice(start, start + pageSize);
    const last = page[page.length - 1];
    const more = start >= 0 && start + pageSize < all.length;
    // Only the returned records are checked in full (a record this version cannot read is left
    // out; the page token still follows the listing's order).
    const jobs = page.flatMap((j) => {
      const parsed = JobRecordSchema.safeParse(j.stored);
      return parsed.success ? [parsed.data] : [];
    });
    return {
      jobs,
      nextPageToken:
        more && last
          ? encodePageToken({ c: last.createdUnixMs, j: last.jobId, f: filterHash })
          : '',
    };
  }

  /**
   * Requests cancellation (running tasks are aborted, their sandboxes destroyed; the job reaches
   * CANCELLED asynchronously). A finished job is returned unchanged.
   */
  async cancel(jobId: string, reason: string, signal?: AbortSignal): Promise<JobRecord> {
    const record = await this.get(jobId);
    if (record.state === 'SUCCEEDED' || record.state === 'FAILED' || record.state === 'CANCELLED') {
      return record;
    }
    const reply = await this.need()
      .refs.refOf({ kind: JOB_ACTOR_KIND, id: jobId })
      .withHints({ jobId })
      .ask(
        'cancel',
        { reason: reason.trim() === '' ? 'user' : reason.slice(0, 500) },
        { timeoutMs: 15_000, ...(signal ? { signal } : {}) },
      );
    return JobRecordSchema.parse(reply);
  }

  /**
   * Deletes a finished job and what it stored: its event log, task records and results,
   * artifacts (`jobs/<jobId>/`), its idempotency key (a later submission with it makes a new
   * job), then its record (a delete marker, so watchers see the job go; removed with the job
   * actor). Its job actor is retired by the
   * leader's {@link JobSweeper} once it sleeps (`gone.<jobId>` until then); its task actors and
   * sandboxes by the actor reaper. Everything is deleted message by message, leaving nothing
   * behind. A deletion cut short is finished by calling again (the record goes last).
   * @throws TroupeError `NOT_FOUND` when there is no such job, `BUSY` (not retryable) while it
   *   has not finished (cancel it first)
   */
  async delete(jobId: string): Promise<DeletedJob> {
    const record = await this.get(jobId);
    if (!FINISHED_STATES.has(record.state)) {
      throw new TroupeError(
        'BUSY',
        `job ${jobId} is ${record.state}: only a finished job can be deleted (cancel it first)`,
        { details: { jobId, state: record.state }, retryable: false },
      );
    }
    const { store, events } = this.need();
    const deletedEvents = await events.deleteJob(jobId);
    const { keys, artifacts } = await store.deleteJobData(jobId);
    await store.putGone(jobId);
    await store.markJobDeleted(jobId);
    this.policies.delete(jobId);
    this.log.info({ jobId, keys, events: deletedEvents, artifacts }, 'job deleted');
    return { keys, events: deletedEvents, artifacts };
  }

  /**
   * Per-task results, a page at a time in plan order, and the aggregate (also while the job
   * runs). A page is read by plan index — the job actor's snapshot for the tasks in flight, the
   * task records of the finished ones — so tasks finishing between two pages never shift one.
   */
  async results(jobId: string, options: ResultsOptions = {}): Promise<JobResultsView> {
    // Reads of a job's records fail while a NATS server restarts or a stream elects a leader,
    // the job actor's host may have died with the ask (chaos seeds 4002, 4026, 4035, 4043:
    // `GetResults` failed "timeout" just after a fault), and no host may take the job actor
    // yet (a coordinator taking over before its own host registered): read again.
    return whileTransient(() => this.readResults(jobId, options), options.signal, {
      isTransient: (err) =>
        isTransientNatsError(err) || isHostSilent(err) || hasReason(err, ErrorReason.NO_HOST),
    });
  }

  private async readResults(jobId: string, options: ResultsOptions): Promise<JobResultsView> {
    const { signal } = options;
    const pageSize = resultsPageSize(options.pageSize);
    const offset = resultsOffset(options.offset, options.pageToken);
    const record = await this.get(jobId);
    const { refs, store } = this.need();
    const from = options.pageToken ? decodeResultsToken(options.pageToken, jobId) : offset;
    const reply = await refs
      .refOf({ kind: JOB_ACTOR_KIND, id: jobId })
      .withHints({ jobId })
      .ask('snapshot', {}, { timeoutMs: 15_000, livenessMs: 1_000, ...(signal ? { signal } : {}) });
    const state = JobStateSchema.parse(reply);
    const to = Math.min(state.total, from + pageSize);
    const indices = Array.from({ length: Math.max(0, to - from) }, (_, k) => from + k);
    const [ids, records, details, work] = await Promise.all([
      indices.length > 0 ? this.taskIds(jobId) : [],
      store.taskRecordsAt(jobId, indices),
      store.taskResultsAt(jobId, indices),
      state.generation > 1 && indices.length > 0
        ? store.getWork(jobId, state.generation)
        : undefined,
    ]);
    const positionOf = positionsOf(state, work);
    const tasks: TaskResultView[] = indices.map((i) => {
      const t = taskView(state, i, ids[i] ?? `#${i}`, records.get(i), positionOf(i));
      const d = details.get(i);
      const fresh = d !== undefined && d.attempt === t.attempts && d.status === t.status;
      return {
        taskId: t.id,
        status: WIRE_TASK_STATUS[t.status],
        ...(t.score !== undefined ? { score: t.score } : {}),
        attempts: t.attempts,
        costUsd: t.costUsd,
        tokens: t.promptTokens + t.completionTokens,
        durationMs: t.durationMs,
        stopReason: t.stopReason ?? '',
        error: t.error ?? '',
        artifacts: d?.artifacts ?? [],
        ...(fresh && d.details ? { details: d.details } : {}),
      };
    });
    return {
      jobId,
      state: state.phase === 'NEW' ? record.state : state.phase,
      aggregate: aggregateOf(state, Date.now()),
      tasks,
      nextPageToken: to < state.total ? encodeResultsToken(jobId, to) : '',
    };
  }

  /** A job's task ids in plan order (a small cache: a results page reads them). */
  private async taskIds(jobId: string): Promise<readonly string[]> {
    const cached = this.idsCache.get(jobId);
    if (cached) return cached;
    const ids = (await this.need().store.getTaskIds(jobId)) ?? [];
    this.idsCache.set(jobId, ids);
    while (this.idsCache.size > 16) {
      const oldest = this.idsCache.keys().next().value;
      if (oldest === undefined) break;
      this.idsCache.delete(oldest);
    }
    return ids;
  }

  /**
   * The job's events from `fromSequence` (or, from the start, its last `tail` events), replayed
   * then followed until JOB_FINISHED.
   */
  async watch(
    jobId: string,
    options: { fromSequence?: number; tail?: number; signal?: AbortSignal; follow?: boolean } = {},
  ): Promise<AsyncGenerator<JobEventRecord>> {
    await this.get(jobId);
    const { tail, ...read } = options;
    const { events } = this.need();
    if (tail && (read.fromSequence ?? 0) <= 1) {
      read.fromSequence = Math.max(1, (await events.lastSequence(jobId)) - tail + 1);
    }
    return events.read(jobId, read);
  }

  /** Opens an artifact of a job for reading. */
  async artifact(jobId: string, path: string): Promise<ArtifactReader> {
    await this.get(jobId);
    const prefix = jobArtifactPrefix(jobId);
    if (!path.startsWith(prefix) || path.split('/').includes('..')) {
      throw invalidArgument(
        'path',
        `must be an artifact of job ${jobId} (starting ${prefix})`,
        path,
      );
    }
    const result = await this.need().store.objects.get(path);
    if (!result) throw new TroupeError('NOT_FOUND', `artifact ${path} not found`);
    const contentType =
      result.info.metadata?.['content-type'] ??
      result.info.description ??
      'application/octet-stream';
    const stream = result.data;
    return {
      size: result.info.size,
      contentType,
      chunks: (async function* () {
        const reader = stream.getReader();
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            if (value) yield value;
          }
          const err = await result.error;
          if (err) throw new TroupeError('UNAVAILABLE', `reading ${path} failed`, { cause: err });
        } finally {
          reader.releaseLock();
        }
      })(),
    };
  }
}

/** A new job id: time-ordered, 18 characters. */
export function newJobId(): string {
  return `j-${Date.now().toString(36)}${randomBytes(4).toString('hex')}`;
}

function encodePageToken(t: { c: number; j: string; f: string }): string {
  return encodeToken(t);
}

function decodePageToken(token: string, filterHash: string): { c: number; j: string } {
  const p = tokenFields(token);
  if (typeof p?.['c'] !== 'number' || typeof p['j'] !== 'string' || p['f'] !== filterHash) {
    throw invalidArgument('page_token', 'is not a token of this listing (same filters required)');
  }
  return { c: p['c'], j: p['j'] };
}

/** A page token: a JSON object in base64url. */
function encodeToken(fields: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(fields)).toString('base64url');
}

/** The fields of a page token, or undefined when it is not one. */
function tokenFields(token: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    return typeof parsed === 'object' && parsed !== null
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
