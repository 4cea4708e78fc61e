import {
  deadLetterStreamName,
  deadLetterSubjectFilter,
  inboxStreamName,
  inboxSubjectFilter,
  kvBucketName,
  TroupeError,
} from '@troupe/proto';
import { type NatsConnection } from '@nats-io/transport-node';
import { type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import { type KV, Kvm } from '@nats-io/kv';

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
  const dedupeNs = (options.dedupeWindowMs ?? 120_000) * 1_000_000;
  await ensureStream(jsm, {
    name: inboxStreamName(cluster),
    subjects: [inboxSubjectFilter(cluster)],
    num_replicas: replicas,
    duplicate_window: dedupeNs,
    allow_direct: true,
  });
  await ensureStream(jsm, {
    name: deadLetterStreamName(cluster),
    subjects: [deadLetterSubjectFilter(cluster)],
    num_replicas: replicas,
    duplicate_window: dedupeNs,
    allow_direct: true,
  });
  const kvm = new Kvm(nc);
  const directory = await kvm.create(kvBucketName(cluster, 'directory'), { replicas, history: 1 });
  const state = await kvm.create(kvBucketName(cluster, 'state'), { replicas, history: 1 });
  return { directory, state };
}

async function ensureStream(
  jsm: JetStreamManager,
  config: Partial<StreamConfig> & { name: string },
): Promise<void> {
  try {
    await jsm.streams.info(config.name);
    return;
  } catch (err) {
    if (!isStreamNotFound(err)) {
      throw new TroupeError('UNAVAILABLE', `cannot read stream ${config.name}`, { cause: err });
    }
  }
  try {
    await jsm.streams.add(config);
  } catch (err) {
    // Another process may have created it between our check and our add.
    try {
      await jsm.streams.info(config.name);
    } catch {
      throw new TroupeError('UNAVAILABLE', `cannot create stream ${config.name}`, { cause: err });
    }
  }
}

function isStreamNotFound(err: unknown): boolean {
  return err instanceof Error && /not found/i.test(err.message);
}
