import { createHash } from 'node:crypto';
import { type Directory, jobScopeOf, type Logger, type RefFactory } from '@troupe/actors';
import { type ActorAddress, parseWith, TroupeError } from '@troupe/proto';
import { type NatsConnection } from '@nats-io/transport-node';
import { CancelWatches } from './cancel-watch';
import { type DriverRegistry } from './driver-registry';
import { type PlannedTask } from './job-driver';
import { type JobEventLog } from './job-event-log';
import { type JobSpec, JobSpecSchema } from './job-spec';
import { type JobWork, listWork, planWork, type WorkList } from './job-state';
import { type JobStore } from './job-store';

/** Actor kind of job actors (one per job, id = job id). */
export const JOB_ACTOR_KIND = 'job';
/** Actor kind of task actors (one per task of a job). */
export const TASK_ACTOR_KIND = 'job-task';

/** What job and task actors need besides their messages; bound once the process is connected. */
export interface JobRuntime {
  cluster: string;
  /** This process's host id (reported in TASK_STARTED). */
  hostId: string;
  nc: NatsConnection;
  /** Replicas of the streams drivers create (search journals, trajectories). */
  replicas: number;
  refs: RefFactory;
  store: JobStore;
  events: JobEventLog;
  drivers: DriverRegistry;
  log: Logger;
  /** How long running tasks get to stop after a cancellation before they are written off. */
  cancelGraceMs: number;
  /** Time allowed to grade a timed-out attempt. */
  gradeTimeoutMs: number;
  /** The actor directory, to restart job actors the runtime gave up on (see {@link revive}). */
  directory?: Directory;
}

/**
 * Puts a STOPPED actor back to SLEEPING (same epoch, by compare-and-set) so the next ask or post
 * activates it again. The runtime stops an actor whose activation failed on a host that vanished
 * (a coordinator restarting while it placed the actor on itself); for the actors of a running job
 * that would strand the job, so the job layer restarts them. Returns whether it did.
 */
export async function revive(
  directory: Directory | undefined,
  addr: ActorAddress,
  log: Logger,
): Promise<boolean> {
  if (!directory) return false;
  const { entry, revision } = await directory.get(addr);
  if (entry.state !== 'STOPPED') return false;
  const rev = await directory.compareAndSet(addr, revision, {
    state: 'SLEEPING',
    epoch: entry.epoch,
    ...jobScopeOf(entry),
    updatedAtMs: Date.now(),
    reason: `restarted by the job watchdog (was stopped: ${entry.reason ?? 'no reason'})`,
  });
  if (rev !== undefined)
    log.warn(
      { actor: `${addr.kind}/${addr.id}`, why: entry.reason },
      'restarted a stopped job actor',
    );
  return rev !== undefined;
}

/**
 * Late binding of the {@link JobRuntime}: actor definitions must exist before the actor system
 * starts, while their dependencies (connection, stores) exist only after. Also caches plans and
 * specs per job for the activations of this process.
 */
export class JobRuntimeHolder {
  private runtime?: JobRuntime;
  private readonly plans = new Map<string, PlannedTask[]>();
  private readonly specs = new Map<string, JobSpec>();
  private readonly ids = new Map<string, string[]>();
  private readonly works = new Map<string, { generation: number; list: WorkList }>();
  /** The cancellation of jobs whose tasks run here (one event subscription per job). */
  readonly cancellations = new CancelWatches(() => this.get());

  /** Binds the runtime (once). */
  bind(runtime: JobRuntime): void {
    this.runtime = runtime;
  }

  /** The bound runtime; `UNAVAILABLE` before {@link bind}. */
  get(): JobRuntime {
    if (!this.runtime) {
      throw new TroupeError('UNAVAILABLE', 'the job runtime of this host is not started yet');
    }
    return this.runtime;
  }

  /** A job's plan (cached; read from the object store on first use). */
  async plan(jobId: string): Promise<PlannedTask[]> {
    const cached = this.plans.get(jobId);
    if (cached) return cached;
    const plan = await this.get().store.getPlan(jobId);
    if (!plan) throw new TroupeError('NOT_FOUND', `job ${jobId} has no stored plan`);
    this.remember(this.plans, jobId, plan);
    return plan;
  }

  /** Caches a plan just stored. */
  rememberPlan(jobId: string, plan: PlannedTask[]): void {
    this.remember(this.plans, jobId, plan);
    this.remember(
      this.ids,
      jobId,
      plan.map((t) => t.id),
    );
  }

  /**
   * The work list of a job's `generation` (the plan in order for the first; the stored list of a
   * resume for later ones), cached.
   */
  async work(jobId: string, generation: number): Promise<JobWork> {
    let ids = this.ids.get(jobId);
    if (!ids) {
      ids = (await this.plan(jobId)).map((t) => t.id);
      this.remember(this.ids, jobId, ids);
    }
    if (generation <= 1) return planWork(ids);
    let list = this.works.get(jobId);
    if (list?.generation !== generation) {
      const stored = await this.get().store.getWork(jobId, generation);
      if (!stored) {
        throw new TroupeError('NOT_FOUND', `job ${jobId} has no work list ${generation}`);
      }
      list = { generation, list: stored };
      this.remember(this.works, jobId, list);
    }
    return listWork(ids, list.list);
  }

  /** Caches the work list of a resume just stored. */
  rememberWork(jobId: string, generation: number, list: WorkList): void {
    this.remember(this.works, jobId, { generation, list });
  }

  /** A job's validated spec (cached; read from its job record on first use). */
  async spec(jobId: string): Promise<JobSpec> {
    const cached = this.specs.get(jobId);
    if (cached) return cached;
    const record = await this.get().store.getJob(jobId);
    if (!record) throw new TroupeError('NOT_FOUND', `job ${jobId} not found`);
    const spec = parseWith(JobSpecSchema, JSON.parse(record.specJson), { prefix: 'spec' });
    this.remember(this.specs, jobId, spec);
    return spec;
  }

  /** Drops what is cached about a job (it finished, or its spec changed). */
  forget(jobId: string): void {
    this.plans.delete(jobId);
    this.specs.delete(jobId);
    this.ids.delete(jobId);
    this.works.delete(jobId);
  }

  private remember<T>(map: Map<string, T>, key: string, value: T): void {
    // A small LRU: a coordinator serves few jobs at once, and plans can be large.
    map.delete(key);
    map.set(key, value);
    while (map.size > 64) {
      const oldest = map.keys().next().value;
      if (oldest === undefined) break;
      map.delete(oldest);
    }
  }
}

/** A string of `[A-Za-z0-9_-]` made of `parts`, hashed when longer than `max`. */
export function compactId(parts: readonly (string | number)[], max: number): string {
  const plain = parts.join('-');
  if (plain.length <= max) return plain;
  const hash = createHash('sha256').update(plain).digest('hex').slice(0, 24);
  const tail = parts.slice(1).join('-');
  const room = max - hash.length - 1;
  return room > 0 && tail.length <= room ? `${hash}-${tail}` : hash;
}

/** Id of the task actor of task `index` of `jobId`. */
export function taskActorId(jobId: string, index: number): string {
  return compactId([jobId, index], 128);
}

/** The `resourceId` of an execution of an attempt (see `TaskContext.resourceId`). */
export function attemptResourceId(
  jobId: string,
  index: number,
  attempt: number,
  execution = 1,
): string {
  return compactId([jobId, index, `a${attempt}`, `e${execution}`], 100);
}
