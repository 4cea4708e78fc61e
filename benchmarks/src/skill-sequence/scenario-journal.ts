import { createKv } from '@troupe/actors';
import type { KV } from '@nats-io/kv';
import { type NatsConnection } from '@nats-io/transport-node';
import { KvBucket, kvBucketName, TroupeError } from '@troupe/proto';
import { type SequenceTaskRun, SequenceTaskRunSchema } from './sequence-task-run';

/** Which run of a scenario: with the skill library, or without it (the ablation's baseline). */
export type SequenceArm = 'library' | 'baseline';

/**
 * The progress journal of `skill-sequence` scenarios in JetStream KV (bucket
 * `troupe_<c>_sequences`): one record per finished task of a scenario's run, keyed
 * `<jobId>.<scenario>.<arm>.<taskId>`, written once the task was graded and its functions
 * admitted. A retried scenario (its host killed) reads them and resumes at the first task
 * without one; the library itself lives in its own bucket and survives the same way.
 */
export class ScenarioJournal {
  private constructor(private readonly kv: KV) {}

  /** Opens (creating if needed) the cluster's journal bucket. */
  static async open(
    nc: NatsConnection,
    o: { cluster: string; replicas?: number },
  ): Promise<ScenarioJournal> {
    const name = kvBucketName(o.cluster, KvBucket.SEQUENCES);
    try {
      return new ScenarioJournal(
        await createKv(nc, name, { replicas: o.replicas ?? 1, history: 1 }),
      );
    } catch (err) {
      throw new TroupeError('UNAVAILABLE', `cannot open the journal bucket ${name}`, {
        cause: err,
      });
    }
  }

  private static key(jobId: string, scenario: string, arm: SequenceArm, taskId: string): string {
    return `${jobId}.${scenario}.${arm}.${taskId}`;
  }

  /** The finished task's record, or undefined. */
  async get(
    jobId: string,
    scenario: string,
    arm: SequenceArm,
    taskId: string,
  ): Promise<SequenceTaskRun | undefined> {
    const e = await this.kv.get(ScenarioJournal.key(jobId, scenario, arm, taskId));
    if (!e || e.operation !== 'PUT' || e.value.length === 0) return undefined;
    const parsed = SequenceTaskRunSchema.safeParse(e.json());
    return parsed.success ? parsed.data : undefined;
  }

  /** Records a finished task (overwrites: a redone task's record is the newer truth). */
  async put(
    jobId: string,
    scenario: string,
    arm: SequenceArm,
    run: SequenceTaskRun,
  ): Promise<void> {
    await this.kv.put(ScenarioJournal.key(jobId, scenario, arm, run.taskId), JSON.stringify(run));
  }
}
