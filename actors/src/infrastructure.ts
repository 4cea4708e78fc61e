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
  const state = await createKv(nc, kvBucketName(cluster, 'state'), { replicas, history: 1 });
  return { directory, state };
}
