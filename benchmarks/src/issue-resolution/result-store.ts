import { createKv } from '@troupe/actors';
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { KV } from '@nats-io/kv';
import { type NatsConnection } from '@nats-io/transport-node';
import { KvBucket, kvBucketName, type Logger, TroupeError } from '@troupe/proto';
import { z } from 'zod';

/** A finished task's result as {@link ResultStore} keeps it. */
export const StoredTaskResultSchema = z
  .object({
    version: z.literal(1),
    taskId: z.string(),
    /** Digest of the task (task.yaml, repo, grader, patch) the result is for. */
    taskDigest: z.string(),
    /** Agent kind and settings the result is for. */
    agentKey: z.string(),
    /** The job that produced it. */
    jobId: z.string(),
    finishedUnixMs: z.number(),
    grade: z
      .object({
        passed: z.boolean(),
        score: z.number().optional(),
        stopReason: z.string().optional(),
        costUsd: z.number().optional(),
        promptTokens: z.number().optional(),
        completionTokens: z.number().optional(),
        details: z.record(z.string(), z.unknown()).optional(),
      })
      .strict(),
  })
  .strict();
/** A stored task result. */
export type StoredTaskResult = z.output<typeof StoredTaskResultSchema>;

/** What {@link ResultStore.open} needs. */
export interface ResultStoreOptions {
  /** `config.resultsDir` as the spec writes it: names the result set cluster-wide. */
  resultsDir: string;
  /** Where the folder copy goes: `resultsDir` resolved on this host (absolute). */
  folder: string;
  /** The cluster's NATS connection (the KV bucket); without it only the folder is used. */
  nats?: { connection: NatsConnection; cluster: string; replicas?: number };
  log: Logger;
}

/**
 * Finished task results of one `resultsDir`. The truth is the cluster's KV bucket
 * `troupe_<c>_results`, keyed `<namespace>.<taskId>` (the namespace a digest of `resultsDir` as
 * the spec writes it), so a re-run on any coordinator host of the cluster skips what another
 * finished. Every result is also written to `<folder>/<taskId>/result.json` (atomically: temp
 * file and rename) for people and tools to read; a result found only in the folder (written
 * before the bucket existed, or copied in) is used and put into the bucket. A record is written
 * once the task is graded: a task interrupted before that has none and runs again from scratch.
 * A result counts only for the same task digest and agent key.
 */
export class ResultStore {
  private constructor(
    private readonly kv: KV | undefined,
    private readonly namespace: string,
    /** Absolute folder of the file copies. */
    readonly folder: string,
    private readonly log: Logger,
  ) {}

  /** Opens (creating if needed) the cluster's results bucket. */
  static async open(o: ResultStoreOptions): Promise<ResultStore> {
    let kv: KV | undefined;
    if (o.nats) {
      const name = kvBucketName(o.nats.cluster, KvBucket.RESULTS);
      try {
        kv = await createKv(o.nats.connection, name, {
          replicas: o.nats.replicas ?? 1,
          history: 1,
        });
      } catch (err) {
        throw new TroupeError('UNAVAILABLE', `cannot open the results bucket ${name}`, {
          cause: err,
          retryable: true,
        });
      }
    }
    return new ResultStore(kv, resultsNamespace(o.resultsDir), o.folder, o.log);
  }

  /** The KV key of a task's result. */
  keyOf(taskId: string): string {
    // Task ids may hold dots, which separate key tokens ('=' is not in ids, so this is one-to-one).
    return `${this.namespace}.${taskId.replaceAll('.', '=2E')}`;
  }

  private fileOf(taskId: string): string {
    return path.join(this.folder, taskId, 'result.json');
  }

  /** The complete, valid result of a task for this digest and agent, or `undefined`. */
  async read(
    taskId: string,
    taskDigest: string,
    agentKey: string,
  ): Promise<StoredTaskResult | undefined> {
    const matches = (r: StoredTaskResult | undefined) =>
      r && r.taskId === taskId && r.taskDigest === taskDigest && r.agentKey === agentKey
        ? r
        : undefined;
    if (this.kv) {
      const e = await this.kv.get(this.keyOf(taskId));
      if (e && e.operation === 'PUT' && e.value.length > 0) {
        const found = matches(parse(() => e.json()));
        if (found) return found;
      }
    }
    const fromFile = matches(await this.readFile(taskId));
    if (fromFile && this.kv) await this.putKv(fromFile);
    return fromFile;
  }

  /** Stores a task's result (replacing an older one): in the bucket, then the folder copy. */
  async write(result: StoredTaskResult): Promise<void> {
    if (this.kv) await this.putKv(result);
    try {
      const file = this.fileOf(result.taskId);
      await mkdir(path.dirname(file), { recursive: true });
      const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
      await writeFile(tmp, `${JSON.stringify(result, null, 2)}\n`);
      await rename(tmp, file);
    } catch (err) {
      // With the bucket, the folder is only a copy (it may be read-only on this host).
      if (!this.kv) throw err;
      this.log.warn({ err, folder: this.folder }, 'could not write the result file copy');
    }
  }

  /** Forgets a task's result (both copies): the next run works it again. */
  async remove(taskId: string): Promise<void> {
    await this.kv?.purge(this.keyOf(taskId));
    await rm(this.fileOf(taskId), { force: true });
  }

  private async putKv(result: StoredTaskResult): Promise<void> {
    try {
      await this.kv!.put(this.keyOf(result.taskId), JSON.stringify(result));
    } catch (err) {
      // A result too large for a message still has its file; this task just runs again elsewhere.
      this.log.warn({ err, taskId: result.taskId }, 'could not store the result in the bucket');
    }
  }

  private async readFile(taskId: string): Promise<StoredTaskResult | undefined> {
    let text: string;
    try {
      text = await readFile(this.fileOf(taskId), 'utf8');
    } catch {
      return undefined; // missing: run the task again
    }
    return parse(() => JSON.parse(text) as unknown);
  }
}

/** The KV namespace of a `resultsDir`: the same spec text names the same results on every host. */
export function resultsNamespace(resultsDir: string): string {
  const normal = path.posix.normalize(resultsDir.replaceAll('\\', '/')).replace(/\/+$/, '');
  return createHash('sha256').update(normal).digest('hex').slice(0, 16);
}

function parse(read: () => unknown): StoredTaskResult | undefined {
  try {
    const parsed = StoredTaskResultSchema.safeParse(read());
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined; // torn or not JSON
  }
}
