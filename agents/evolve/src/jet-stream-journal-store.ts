import { TroupeError } from '@troupe/proto';
import { LazyStream, type Logger } from '@troupe/actors';
import {
  DeliverPolicy,
  jetstream,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { type NatsConnection } from '@nats-io/transport-node';
import { evolveStreamName, evolveSubject, evolveSubjectFilter } from './evolve-names';
import { type JournalRecord, JournalRecordSchema, journalMessageId } from './journal-record';
import { type AppendReceipt, type JournalRead, type JournalStore } from './journal-store';

/** What a caller passes to {@link JetStreamJournalStore}. */
export interface JetStreamJournalStoreOptions {
  /** An open NATS connection (not closed by the store). */
  connection: NatsConnection;
  /** Cluster name. */
  cluster: string;
  /**
   * Replicas of the stream (3 on a JetStream cluster).
   * @default 1
   */
  replicas?: number;
  /**
   * Window in which the stream drops a repeated message id. Resumed searches never re-append an
   * attempt they replayed, so the window only has to cover publish retries and racing writers.
   * @default 3600000
   */
  duplicateWindowMs?: number;
  /**
   * Records fetched per round trip when reading.
   * @default 256
   */
  readBatch?: number;
  /** Warned when the stream exists with other settings (it is used as it is). @default none */
  logger?: Logger;
}

/**
 * Search journals in JetStream: stream `TROUPE_<C>_EVOLVE`, one subject per task
 * (`troupe.<c>.evolve.<taskId>`), every record published with `Nats-Msg-Id` =
 * {@link journalMessageId} (the attempt id for a node), so each attempt is journaled once even
 * when a publish is retried or two activations race. `lastSeq` values are stream sequences.
 */
export class JetStreamJournalStore implements JournalStore {
  private readonly js: JetStreamClient;
  private readonly cluster: string;
  private readonly stream: LazyStream;
  private readonly readBatch: number;

  constructor(options: JetStreamJournalStoreOptions) {
    this.js = jetstream(options.connection);
    this.cluster = options.cluster;
    this.stream = new LazyStream({
      connection: options.connection,
      spec: {
        name: evolveStreamName(options.cluster),
        subjects: [evolveSubjectFilter(options.cluster)],
        replicas: options.replicas ?? 1,
        duplicateWindowMs: options.duplicateWindowMs ?? 3_600_000,
      },
      ...(options.logger ? { logger: options.logger } : {}),
    });
    this.readBatch = options.readBatch ?? 256;
  }

  /** Creates the stream if it does not exist (idempotent; called by append and read). */
  ensure(): Promise<JetStreamManager> {
    return this.stream.ensure();
  }

  async append(
    record: JournalRecord,
    options: { signal?: AbortSignal } = {},
  ): Promise<AppendReceipt> {
    JournalRecordSchema.parse(record);
    await this.ensure();
    options.signal?.throwIfAborted();
    try {
      const ack = await this.js.publish(
        evolveSubject(this.cluster, record.taskId),
        JSON.stringify(record),
        { msgID: journalMessageId(record) },
      );
      return { seq: ack.seq, duplicate: ack.duplicate };
    } catch (err) {
      throw new TroupeError('UNAVAILABLE', `cannot append to the journal of ${record.taskId}`, {
        cause: err,
      });
    }
  }

  async read(
    taskId: string,
    afterSeq = 0,
    options: { signal?: AbortSignal } = {},
  ): Promise<JournalRead> {
    const jsm = await this.ensure();
    const subject = evolveSubject(this.cluster, taskId);
    const last = await jsm.streams.getMessage(this.stream.name, { last_by_subj: subject });
    if (!last || last.seq <= afterSeq) return { records: [], lastSeq: afterSeq };
    const consumer = await this.js.consumers.get(this.stream.name, {
      filter_subjects: subject,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: afterSeq + 1,
    });
    const records: JournalRecord[] = [];
    let lastSeq = afterSeq;
    try {
      while (lastSeq < last.seq) {
        options.signal?.throwIfAborted();
        const batch = await consumer.fetch({ max_messages: this.readBatch, expires: 5_000 });
        let got = 0;
        for await (const m of batch) {
          got++;
          const parsed = JournalRecordSchema.safeParse(m.json());
          if (!parsed.success) {
            throw new TroupeError('INTERNAL', `journal of ${taskId}: bad record at seq ${m.seq}`, {
              cause: parsed.error,
            });
          }
          records.push(parsed.data);
          lastSeq = m.seq;
          if (lastSeq >= last.seq) break;
        }
        if (got === 0) {
          throw new TroupeError('UNAVAILABLE', `journal of ${taskId}: read stalled at ${lastSeq}`);
        }
      }
    } finally {
      await consumer.delete().catch(() => undefined);
    }
    return { records, lastSeq };
  }
}
