import { createHash } from 'node:crypto';
import {
  isWrongLastSequence,
  createKv,
  createObjectStore,
  deleteSubjectMessages,
  kvKeys,
  kvKeysAt,
  kvLatest,
  kvEntryFromLeader,
  kvValueFromLeader,
  KvWriter,
  removeKvKey,
  storeOutageOf,
  subjectMessages,
} from '@troupe/actors';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { kvBucketName, objectStoreName, toTroupeError, TroupeError } from '@troupe/proto';
import { type NatsConnection } from '@nats-io/transport-node';
import { type KV } from '@nats-io/kv';
import { type ObjectInfo, type ObjectStore } from '@nats-io/obj';
import { z } from 'zod';
import { type PlannedTask } from './job-driver';
import {
  type JobRecord,
  JobRecordSchema,
  supersedes,
  type TaskResultRecord,
  TaskResultRecordSchema,
} from './job-record';
import { taskFileObjectName } from './task-file';
import { type TaskEntry, type TaskRecord, TaskRecordSchema, type WorkList } from './job-state';

/** Options of {@link JobStore.open}. */
export interface JobStoreOptions {
  /** Replicas of the bucket and the object store. @default 1 */
  replicas?: number;
}

/** Where a job's plan is kept in the object store. */
export function planObjectName(jobId: string): string {
  return `jobs/${jobId}/plan.json`;
}

/** Where a job's task ids, in plan order, are kept in the object store. */
export function taskIdsObjectName(jobId: string): string {
  return `jobs/${jobId}/task-ids.json`;
}

/** Where the work list of a resumed job's generation is kept in the object store. */
export function workObjectName(jobId: string, generation: number): string {
  return `jobs/${jobId}/work-${generation}.json`;
}

/** Prefix of every artifact of a job in the object store. */
export function jobArtifactPrefix(jobId: string): string {
  return `jobs/${jobId}/`;
}

/**
 * Prefix of the objects a job's plan stores for its tasks (task payloads too large for a message:
 * repositories, graders). The job actor deletes everything under it when the job finishes.
 */
export function jobPayloadPrefix(jobId: string): string {
  return `jobs/${jobId}/payload/`;
}

/** What a listing reads of every job record (the rest is checked for the jobs it returns). */
const ListedJobSchema = JobRecordSchema.pick({
  jobId: true,
  state: true,
  labels: true,
  createdUnixMs: true,
});

/** A job as {@link JobStore.listJobs} returns it. */
export type ListedJob = z.output<typeof ListedJobSchema> & {
  /** The stored record, unchecked: parse it with `JobRecordSchema` before use. */
  stored: unknown;
};

const PlanSchema = z.array(z.object({ id: z.string(), input: z.unknown() }));
const TaskIdsSchema = z.array(z.string());
const WorkSchema = z.object({
  indices: z.array(z.number().int().nonnegative()),
  attempts: z.array(z.number().int().nonnegative()),
});
/**
 * How long each job-store request waits for its answer (the JetStream client's default is 5 s).
 * The job actor's turns read and write the store, and a request sent while a stream of the store
 * elects its leader (a NATS server was lost) is lost, not late: it waited all 5 s, the turn then
 * failed as a store outage and was run again — a job's next task completed 4 s after its streams
 * had leaders again in chaos run 19 (seed 8927). A stream with a leader answers in milliseconds;
 * a turn that times out is run again without counting as a failure.
 */
export const JOB_STORE_TIMEOUT_MS = 2_000;

/** Task records or results read at once (direct gets in flight). */
const READ_BATCH = 256;
/** A stored record, parsed when it is used (a listing checks only the ones it returns). */
interface StoredRecord {
  json(): unknown;
}

/** How long a job listing streams the bucket's last entries before it reads the records instead. */
const LIST_PASS_DEADLINE_MS = 2_000;

/**
 * Persistence of jobs besides the job actor's own state: the KV bucket `troupe_<c>_jobs` (job
 * records `job.<jobId>` for GetJob/ListJobs (a delete marker once the job is deleted),
 * idempotency keys `idem.<sha256>`, task results `result.<jobId>.<index>`, task records
 * `task.<jobId>.<index>`, the idempotency key a job was submitted with `idemof.<jobId>`, deleted
 * jobs whose job actor awaits retirement `gone.<jobId>`) and the
 * object store
 * `troupe_<c>_artifacts` (plans, task ids, work lists and artifacts under `jobs/<jobId>/`).
 */
export class JobStore {
  /** The object store's stream, read and deleted from message by message. */
  private readonly objectStream: string;
  /** The hot writes (job records, task records and results): see `KvWriter`. */
  private readonly writer: KvWriter;

  private constructor(
    nc: NatsConnection,
    readonly kv: KV,
    readonly objects: ObjectStore,
    private readonly jsm: JetStreamManager,
    private readonly objectBucket: string,
    /** The KV bucket's name (`kv`'s). */
    private readonly bucket: string,
  ) {
    this.objectStream = `OBJ_${objectBucket}`;
    this.writer = new KvWriter(nc, kv, JOB_STORE_TIMEOUT_MS);
  }

  /** Opens (creating if needed) the bucket and the object store of `cluster`. */
  static async open(
    nc: NatsConnection,
    cluster: string,
    options: JobStoreOptions = {},
  ): Promise<JobStore> {
    const replicas = options.replicas ?? 1;
    const bucket = kvBucketName(cluster, 'jobs');
    const client = { timeoutMs: JOB_STORE_TIMEOUT_MS };
    const kv = await createKv(nc, bucket, { replicas, history: 1 }, client);
    // Another component (the node agent's artifact store) may have created the store with its own
    // options: open it as it is, create it only when missing.
    const name = objectStoreName(cluster);
    const objects = await createObjectStore(nc, name, { replicas }, client);
    const jsm = await jetstreamManager(nc, { timeout: JOB_STORE_TIMEOUT_MS });
    return new JobStore(nc, kv, objects, jsm, name, bucket);
  }

  /**
   * Creates a job record; `ALREADY_EXISTS` when the id is taken. Any other failure (a record over
   * the server's `max_payload`, an unreachable server) is passed on as it is, never reported as a
   * taken id.
   */
  async createJob(record: JobRecord): Promise<void> {
    try {
      await this.kv.create(`job.${record.jobId}`, JSON.stringify(record));
    } catch (err) {
      if (isWrongLastSequence(err)) {
        throw new TroupeError('ALREADY_EXISTS', `job ${record.jobId} already exists`, {
          cause: err,
        });
      }
      throw toTroupeError(err);
    }
  }

  /** Writes a job record (last writer wins: only the job actor writes after creation). */
  async putJob(record: JobRecord): Promise<void> {
    await storeWrite(() => this.writer.put(`job.${record.jobId}`, JSON.stringify(record)));
  }

  /** A job record, or undefined. */
  async getJob(jobId: string): Promise<JobRecord | undefined> {
    const job = await this.findJob(jobId);
    return job === 'unreadable' ? undefined : job;
  }

  /**
   * The job's record; `'unreadable'` when one is stored that this version cannot read; undefined
   * when there is none (never created, or deleted). One read, and when it finds nothing a second
   * from the bucket stream's leader: any replica answers the first, and one catching up after its
   * server restarted said "no such job" for a job submitted seconds before (chaos seed 8007).
   */
  async findJob(jobId: string): Promise<JobRecord | 'unreadable' | undefined> {
    const key = `job.${jobId}`;
    const e = await this.kv.get(key);
    let data: Uint8Array | undefined;
    if (e && e.operation === 'PUT') data = e.value;
    else data = (await kvValueFromLeader(this.jsm, this.bucket, key))?.value;
    if (!data) return undefined;
    let json: unknown;
    try {
      json = JSON.parse(new TextDecoder().decode(data));
    } catch {
      return 'unreadable';
    }
    const parsed = JobRecordSchema.safeParse(json);
    return parsed.success ? parsed.data : 'unreadable';
  }

  /**
   * Every job in the bucket (unsorted), for listings: the fields a listing filters and sorts on,
   * checked, and the record as stored, to check in full with {@link JobRecordSchema} when it is
   * returned (a page, not every job). One consumer streams the records of the `job.*` keys in one
   * pass — not a key listing followed by one request per record, which cost three times as much
   * with 400 jobs; the bucket keeps one entry per key. A pass that stalls
   * (see {@link listJobsAt}) gives way to reading the records after 2 s.
   */
  async listJobs(): Promise<ListedJob[]> {
    return (await this.listJobsAt()).jobs;
  }

  /**
   * {@link listJobs} with the bucket revision it read up to: a {@link watchJobs} from the next
   * revision misses no change made after the listing; a change made while the records are read
   * may be seen twice (in the listing and by the watch).
   */
  async listJobsAt(): Promise<{ jobs: ListedJob[]; revision: number }> {
    const listed =
      (await this.streamJobRecords(LIST_PASS_DEADLINE_MS)) ?? (await this.readJobRecords());
    const { revision, latest } = listed;
    const jobs: ListedJob[] = [];
    for (const e of latest) {
      let value: unknown;
      try {
        value = e.json();
      } catch {
        continue; // not a record this version wrote
      }
      const parsed = ListedJobSchema.safeParse(value);
      if (parsed.success) jobs.push({ ...parsed.data, stored: value });
    }
    return { jobs, revision };
  }

  /**
   * The `job.*` records in one pass of a consumer over the bucket (see {@link kvLatest}: the
   * bucket keeps one entry per key, and its consumer is deleted after the pass, where
   * `kv.history()` left one in nats-server for five minutes per listing), or undefined when it has
   * not ended within `deadlineMs`.
   */
  private async streamJobRecords(
    deadlineMs: number,
  ): Promise<{ revision: number; latest: StoredRecord[] } | undefined> {
    const pass = await kvLatest(this.kv, 'job.*', deadlineMs);
    if (pass === undefined) return undefined;
    const latest: StoredRecord[] = [];
    for (const e of pass.entries) {
      if (e.operation === 'PUT') {
        latest.push({ json: () => JSON.parse(new TextDecoder().decode(e.value)) as unknown });
      }
    }
    return { revision: pass.revision, latest };
  }

  /**
   * The `job.*` records read one by one (256 at a time) after listing the keys from the stream's
   * subject index: slower than {@link streamJobRecords}, but never waits on a consumer.
   */
  private async readJobRecords(): Promise<{ revision: number; latest: StoredRecord[] }> {
    const { keys, revision } = await kvKeysAt(this.kv, 'job.*');
    const latest: StoredRecord[] = [];
    await readBatched(keys, async (k) => {
      const e = await this.kv.get(k);
      if (e?.operation === 'PUT') latest.push(e);
    });
    return { revision, latest };
  }

  /**
   * Follows the job records written after `afterRevision` (0: every record, current values
   * first): each change as the job id and the record as stored (unchecked), or undefined when the
   * record was deleted. Ends when `signal` aborts.
   */
  async *watchJobs(
    afterRevision: number,
    signal: AbortSignal,
  ): AsyncGenerator<{ jobId: string; stored: unknown }> {
    if (signal.aborted) return;
    const watcher = await this.kv.watch({
      key: 'job.*',
      ...(afterRevision > 0 ? { resumeFromRevision: afterRevision + 1 } : {}),
    });
    const stop = () => watcher.stop();
    signal.addEventListener('abort', stop, { once: true });
    try {
      for await (const e of watcher) {
        let stored: unknown;
        if (e.operation === 'PUT') {
          try {
            stored = e.json();
          } catch {
            continue; // not a record this version wrote
          }
        }
        yield { jobId: e.key.slice('job.'.length), stored };
      }
    } finally {
      signal.removeEventListener('abort', stop);
      watcher.stop();
    }
  }

  /**
   * Binds an idempotency key to `jobId` unless it is bound already; returns the job it is bound
   * to (the given one when this call bound it).
   */
  async bindIdempotencyKey(key: string, jobId: string): Promise<string> {
    const k = idempotencyKeyOf(key);
    try {
      await this.kv.create(k, jobId);
      return jobId;
    } catch (err) {
      const e = await this.kv.get(k);
      if (e && e.operation === 'PUT') return e.string();
      throw new TroupeError('UNAVAILABLE', 'cannot record the idempotency key', { cause: err });
    }
  }

  /**
   * Writes the full result of a task attempt, unless the record stored for the task is of a later
   * attempt or execution (see {@link supersedes}); false when it was not written. A task actor's
   * activation fenced while its host was unreachable runs on until it learns so, and its result
   * (often an error from the sandbox the newer execution replaced) must not take the newer one's
   * place when it is written last (chaos seed 9100). A compare-and-set: the first write of a task
   * expects no record (one request); a later one reads the stored record from the bucket stream's
   * leader, then writes at its revision.
   */
  async putTaskResult(jobId: string, result: TaskResultRecord): Promise<boolean> {
    const key = `result.${jobId}.${result.index}`;
    const value = JSON.stringify(result);
    return storeWrite(async () => {
      // Not `kv.create`, which after any failure reads the key again (a second timeout when the
      // store does not answer).
      let previousSeq = 0;
      for (let tries = 0; ; tries++) {
        try {
          await this.writer.put(key, value, { previousSeq });
          return true;
        } catch (err) {
          // A record is stored, or another execution wrote in between: compare with it. Each
          // lost race is another writer's write, so this ends; the bound is for a store that
          // misbehaves (of six writing at once, the last can lose five times).
          if (!isWrongLastSequence(err) || tries >= PUT_RESULT_TRIES) throw err;
        }
        // From the leader: a replica catching up after its server restarted answers an older
        // revision, whose compare-and-set would fail again.
        const stored = await kvEntryFromLeader(this.jsm, this.bucket, key);
        const parsed = stored?.value && TaskResultRecordSchema.safeParse(safeJson(stored.value));
        if (parsed && parsed.success && supersedes(parsed.data, result)) return false;
        previousSeq = stored?.revision ?? 0;
      }
    });
  }

  /** The stored task results of `indices` of a job, by plan index. */
  async taskResultsAt(
    jobId: string,
    indices: readonly number[],
  ): Promise<Map<number, TaskResultRecord>> {
    const out = new Map<number, TaskResultRecord>();
    await readBatched(indices, async (i) => {
      const e = await this.kv.get(`result.${jobId}.${i}`);
      if (!e || e.operation !== 'PUT') return;
      const parsed = TaskResultRecordSchema.safeParse(safeJson(e.value));
      if (parsed.success) out.set(parsed.data.index, parsed.data);
    });
    return out;
  }

  /** Every stored task result of a job, by plan index. */
  async taskResults(jobId: string): Promise<Map<number, TaskResultRecord>> {
    return this.taskResultsAt(jobId, indicesOf(await kvKeys(this.kv, `result.${jobId}.*`)));
  }

  /** Writes the records of finished tasks (idempotent: the same entry twice is the same record). */
  async putTaskRecords(
    jobId: string,
    generation: number,
    entries: readonly TaskEntry[],
  ): Promise<void> {
    await storeWrite(() =>
      readBatched(entries, async (t) => {
        const record: TaskRecord = { ...t, generation };
        await this.writer.put(`task.${jobId}.${t.index}`, JSON.stringify(record));
      }),
    );
  }

  /** The task records of `indices` of a job, by plan index. */
  async taskRecordsAt(jobId: string, indices: readonly number[]): Promise<Map<number, TaskRecord>> {
    const out = new Map<number, TaskRecord>();
    await readBatched(indices, async (i) => {
      const e = await this.kv.get(`task.${jobId}.${i}`);
      if (!e || e.operation !== 'PUT') return;
      const parsed = TaskRecordSchema.safeParse(safeJson(e.value));
      if (parsed.success) out.set(parsed.data.index, parsed.data);
    });
    return out;
  }

  /**
   * Every task record of a job, by plan index. Keys are listed from the stream's subject index and
   * read in batches, not through a consumer: after a server loss a consumer's creation can stall
   * for seconds (see `kvKeys`).
   */
  async taskRecords(jobId: string): Promise<Map<number, TaskRecord>> {
    return this.taskRecordsAt(jobId, indicesOf(await kvKeys(this.kv, `task.${jobId}.*`)));
  }

  /** Stores a job's task ids in plan order (what results list for tasks with no record yet). */
  async putTaskIds(jobId: string, ids: readonly string[]): Promise<void> {
    await storeWrite(() =>
      this.objects.putBlob(
        { name: taskIdsObjectName(jobId), description: 'job task ids' },
        new TextEncoder().encode(JSON.stringify(ids)),
      ),
    );
  }

  /** A job's task ids in plan order, or undefined when none were stored. */
  async getTaskIds(jobId: string): Promise<string[] | undefined> {
    const blob = await this.readObject(taskIdsObjectName(jobId));
    if (!blob) return undefined;
    return TaskIdsSchema.parse(JSON.parse(new TextDecoder().decode(blob)));
  }

  /** Stores the work list (plan indices) of a resumed job's `generation`. */
  async putWork(jobId: string, generation: number, work: WorkList): Promise<void> {
    await storeWrite(() =>
      this.objects.putBlob(
        { name: workObjectName(jobId, generation), description: 'job work list' },
        new TextEncoder().encode(JSON.stringify(work)),
      ),
    );
  }

  /** The work list of a resumed job's `generation`, or undefined. */
  async getWork(jobId: string, generation: number): Promise<WorkList | undefined> {
    const blob = await this.readObject(workObjectName(jobId, generation));
    if (!blob) return undefined;
    return WorkSchema.parse(JSON.parse(new TextDecoder().decode(blob)));
  }

  /** Stores a job's plan (object store: plans can be larger than a KV value). */
  async putPlan(jobId: string, tasks: readonly PlannedTask[]): Promise<void> {
    await storeWrite(() =>
      this.objects.putBlob(
        { name: planObjectName(jobId), description: 'job plan' },
        new TextEncoder().encode(JSON.stringify(tasks)),
      ),
    );
  }

  /** A job's plan, or undefined when none was stored. */
  async getPlan(jobId: string): Promise<PlannedTask[] | undefined> {
    const blob = await this.readObject(planObjectName(jobId));
    if (!blob) return undefined;
    return PlanSchema.parse(JSON.parse(new TextDecoder().decode(blob)));
  }

  /**
   * Stores an uploaded task file under its reference (`sha256:<hex>` of `bytes`), unless the same
   * bytes are stored already.
   */
  async putTaskFile(upload: string, bytes: Uint8Array, name: string): Promise<void> {
    const objectName = taskFileObjectName(upload);
    const existing = await this.objects.info(objectName);
    if (existing && !existing.deleted && existing.size === bytes.byteLength) return;
    await this.objects.putBlob({ name: objectName, description: `task file ${name}` }, bytes);
  }

  /** An uploaded task file's bytes, or undefined when none is stored under `upload`. */
  async getTaskFile(upload: string): Promise<Uint8Array | undefined> {
    return (await this.readObject(taskFileObjectName(upload))) ?? undefined;
  }

  /** Deletes every object whose name starts with `prefix`; returns how many. */
  async deletePrefix(prefix: string): Promise<number> {
    let deleted = 0;
    for (const name of await this.objectNames(prefix)) {
      const info = await this.objects.info(name);
      if (!info || info.deleted) continue;
      await this.objects.delete(name);
      deleted++;
    }
    return deleted;
  }

  /**
   * An object's bytes read chunk by chunk with gets from the stream (its SHA-256 checked), or
   * null when there is none. The object store's own read creates a consumer per read, which the
   * server keeps 5 minutes: a job's plan and task ids are read at least once per job, so a busy
   * cluster held hundreds of them (153 in the soak).
   */
  private async readObject(name: string): Promise<Uint8Array | null> {
    const info = await this.objects.info(name);
    if (!info || info.deleted) return null;
    const chunks: Uint8Array[] = [];
    const sha = createHash('sha256');
    const walk = subjectMessages(this.jsm, this.objectStream, this.chunkSubject(info), info.chunks);
    for await (const m of walk) {
      chunks.push(m.data);
      sha.update(m.data);
    }
    const digest = `SHA-256=${padBase64(sha.digest('base64url'))}`;
    if (chunks.length !== info.chunks || digest !== info.digest) {
      throw new TroupeError('UNAVAILABLE', `object ${name} is incomplete or corrupt`, {
        details: { object: name },
      });
    }
    return Buffer.concat(chunks);
  }

  /** The subject of an object's chunks. */
  private chunkSubject(info: ObjectInfo): string {
    return `$O.${this.objectBucket}.C.${info.nuid}`;
  }

  /**
   * Names of the objects (deleted ones included) starting with `prefix`, from the stream's subject
   * index of their metadata subjects: no consumer reading every object's metadata, as the object
   * store's own listing does (an ordered consumer the server keeps 5 minutes: one per deleted
   * job piled up by the hundreds in the soak).
   */
  private async objectNames(prefix: string): Promise<string[]> {
    const metaPrefix = `$O.${this.objectBucket}.M.`;
    const info = await this.jsm.streams.info(this.objectStream, {
      subjects_filter: `${metaPrefix}>`,
    });
    return Object.keys(info.state.subjects ?? {})
      .map((s) => Buffer.from(s.slice(metaPrefix.length), 'base64url').toString())
      .filter((name) => name.startsWith(prefix));
  }

  /**
   * Deletes a job's task records and results (`task.<jobId>.*`, `result.<jobId>.*`) and every
   * object under `jobs/<jobId>/`, leaving no marker (message by message, see
   * `deleteSubjectMessages`). The job record is not touched: {@link markJobDeleted} goes last.
   */
  async deleteJobData(jobId: string): Promise<{ keys: number; artifacts: number }> {
    const keys = [
      ...(await kvKeys(this.kv, `task.${jobId}.*`)),
      ...(await kvKeys(this.kv, `result.${jobId}.*`)),
    ];
    let removed = 0;
    await readBatched(keys, async (k) => {
      const n = await removeKvKey(this.kv, k);
      removed += n;
    });
    let artifacts = 0;
    for (const name of await this.objectNames(jobArtifactPrefix(jobId))) {
      const info = await this.objects.info(name);
      if (!info || info.deleted) continue;
      // Chunks, then the metadata: no "deleted" record is left per object (the object store's
      // own delete keeps one for good, and purges the chunks with a filtered purge).
      await deleteSubjectMessages(this.jsm, this.objectStream, this.chunkSubject(info));
      await deleteSubjectMessages(
        this.jsm,
        this.objectStream,
        objectMetaSubject(this.objectBucket, name),
      );
      artifacts++;
    }
    // Its idempotency key, if it still names this job: a later submission with it makes a new job.
    const note = await this.kv.get(`idemof.${jobId}`);
    if (note?.operation === 'PUT') {
      const bound = await this.kv.get(note.string());
      if (bound?.operation === 'PUT' && bound.string() === jobId) {
        await removeKvKey(this.kv, note.string(), bound.revision);
      }
      await removeKvKey(this.kv, `idemof.${jobId}`);
    }
    return { keys: removed, artifacts };
  }

  /** Notes which idempotency key a job was submitted with (`idemof.<jobId>`), for its deletion. */
  async noteIdempotencyKey(jobId: string, key: string): Promise<void> {
    await storeWrite(() => this.kv.put(`idemof.${jobId}`, idempotencyKeyOf(key)));
  }

  /**
   * Deletes the job record with a delete marker, so watchers of the jobs (WatchJobs) see it go
   * and {@link jobDeleted} tells a deleted job from one that never was.
   */
  async markJobDeleted(jobId: string): Promise<void> {
    await storeWrite(() => this.kv.delete(`job.${jobId}`));
  }

  /**
   * Whether the job was deleted: its record's key holds the delete marker (kept until the
   * leader's sweep has retired the job actor: {@link forgetDeletedJob}).
   */
  async jobDeleted(jobId: string): Promise<boolean> {
    const e = await this.kv.get(`job.${jobId}`);
    return e !== null && e.operation !== 'PUT';
  }

  /**
   * Binds an idempotency key anew (its job was deleted). A deletion releases the key itself
   * through the job's `idemof.<jobId>` note; this serves jobs submitted before those notes were
   * written (an upgraded cluster), whose deletion left the key bound.
   */
  async rebindIdempotencyKey(key: string, jobId: string): Promise<void> {
    await storeWrite(() => this.kv.put(idempotencyKeyOf(key), jobId));
  }

  /** Notes a deleted job whose job actor is still to be retired (`gone.<jobId>`). */
  async putGone(jobId: string): Promise<void> {
    await storeWrite(() => this.kv.put(`gone.${jobId}`, String(Date.now())));
  }

  /** Deleted jobs whose job actor is still to be retired. */
  async goneJobs(): Promise<string[]> {
    return (await kvKeys(this.kv, 'gone.*')).map((k) => k.slice('gone.'.length));
  }

  /**
   * The job actor of a deleted job is retired: its note goes, and the record's delete marker
   * (watchers had it minutes ago), so nothing of the job is left.
   */
  async forgetDeletedJob(jobId: string): Promise<void> {
    const marker = await this.kv.get(`job.${jobId}`);
    if (marker && marker.operation !== 'PUT') {
      await removeKvKey(this.kv, `job.${jobId}`, marker.revision);
    }
    await removeKvKey(this.kv, `gone.${jobId}`);
  }

  /** Stores an artifact under `path`. */
  async putArtifact(path: string, data: Uint8Array, contentType: string): Promise<ObjectInfo> {
    return this.objects.putBlob(
      { name: path, description: contentType, metadata: { 'content-type': contentType } },
      data,
    );
  }
}

/**
 * A write of the job store: a transient NATS failure (a stream without a leader or quorum, a
 * server restarting) becomes a {@link StoreUnavailableError}, which the actor runtime retries
 * without counting an attempt towards the message's dead letter. Chaos seed 7044: with two of
 * three servers down, a task actor's result write failed "jetstream is not enabled" five times
 * in 4 s, its message was dead-lettered and the job waited for that task until its deadline.
 */
async function storeWrite<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    throw storeOutageOf(err, 'job store') ?? err;
  }
}

/** The bucket key of an idempotency key. */
function idempotencyKeyOf(key: string): string {
  return `idem.${createHash('sha256').update(key).digest('hex')}`;
}

/** The object store's subject of an object's metadata (nats.js: padded base64url of the name). */
function objectMetaSubject(bucket: string, name: string): string {
  return `$O.${bucket}.M.${padBase64(Buffer.from(name).toString('base64url'))}`;
}

/** Base64 padded with `=` to a multiple of 4 (how the object store writes names and digests). */
function padBase64(b64: string): string {
  return b64.padEnd(Math.ceil(b64.length / 4) * 4, '=');
}

/** Runs `fn` over `items`, {@link READ_BATCH} at a time. */
async function readBatched<T>(items: readonly T[], fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += READ_BATCH) {
    await Promise.all(items.slice(i, i + READ_BATCH).map(fn));
  }
}

/** The plan indices at the end of `<prefix>.<jobId>.<index>` keys. */
function indicesOf(keys: readonly string[]): number[] {
  return keys
    .map((k) => Number(k.slice(k.lastIndexOf('.') + 1)))
    .filter((i) => Number.isInteger(i) && i >= 0);
}

/** How many compare-and-set races a task result write may lose before it gives up. */
const PUT_RESULT_TRIES = 16;

/** `data` parsed as JSON, or undefined when it is not JSON. */
function safeJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(data));
  } catch {
    return undefined;
  }
}
