import {
  deadLetterStreamName,
  deadLetterSubjectFilter,
  inboxStreamName,
  inboxSubjectFilter,
  kvBucketName,
} from '@troupe/proto';
import { type NatsConnection } from '@nats-io/transport-node';
import { type JetStreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { createKv } from './buckets';
import { ensureStream } from './ensure-stream';

/** Options of {@link ensureInfrastructure}. */
export interface InfrastructureOptions {
  /**
   * Replicas of every stream and bucket (3 on a JetStream cluster).
   * @default 1
   */
  replicas?: number;
  /**
   * Window in which a repeated `dedupeId` is dropped by the inbox stream.
   * @default 120000
   */
  dedupeWindowMs?: number;
}

/**
 * How long a request to the actor state bucket (a commit's write, a claim, a read) waits for its
 * answer. One sent while the bucket's stream elects a leader is lost, not late: a sandbox actor's
 * first commit (a create, which took the JetStream client's 5 s) made a task wait 6.6 s after the
 * streams had leaders again (chaos run 24, seed 9429). The commit path reads what became of an
 * unanswered write and writes again (StateCell), so a lost request costs this, not 5 s.
 */
export const STATE_STORE_TIMEOUT_MS = 2_000;

/** The JetStream resources the actor runtime uses. */
export interface ActorInfrastructure {
  directory: KV;
  state: KV;
}

/**
 * Creates (idempotently) the inbox and dead-letter streams and the directory and state buckets
 * of a cluster. Safe to call from every process at start-up.
 */
export async function ensureInfrastructure(
  nc: NatsConnection,
  jsm: JetStreamManager,
  cluster: string,
  options: InfrastructureOptions = {},
): Promise<ActorInfrastructure> {
  const replicas = options.replicas ?? 1;
  const duplicateWindowMs = options.dedupeWindowMs ?? 120_000;
  await ensureStream(jsm, {
    name: inboxStreamName(cluster),
    subjects: [inboxSubjectFilter(cluster)],
    replicas,
    duplicateWindowMs,
    allowDirect: true,
  });
  await ensureStream(jsm, {
    name: deadLetterStreamName(cluster),
    subjects: [deadLetterSubjectFilter(cluster)],
    replicas,
    duplicateWindowMs,
    allowDirect: true,
  });
  const directory = await createKv(nc, kvBucketName(cluster, 'directory'), {
    replicas,
    history: 1,
  });
  const state = await createKv(
    nc,
    kvBucketName(cluster, 'state'),
    { replicas, history: 1 },
    { timeoutMs: STATE_STORE_TIMEOUT_MS },
  );
  return { directory, state };
}
