import { type ActorAddress, directoryKey, TroupeError } from '@troupe/proto';
import { type KV } from '@nats-io/kv';
import { type NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';
import { isWrongLastSequence } from './internal/kv-errors';
import { KvWriter } from './kv-writer';
import { kvKeys } from './kv-keys';
import { removeKvKey } from './internal/subject-delete';
import { decodeJson, encodeJson } from './internal/json-codec';

/** Lifecycle states of an actor in the directory (ARCHITECTURE.md §5). */
export const ActivationState = {
  SLEEPING: 'SLEEPING',
  ACTIVATING: 'ACTIVATING',
  IDLE: 'IDLE',
  RUNNING: 'RUNNING',
  STOPPED: 'STOPPED',
} as const;
/** One of {@link ActivationState}. */
export type ActivationState = (typeof ActivationState)[keyof typeof ActivationState];

/** Directory entry of one actor: who hosts it and under which fencing epoch. */
export const DirectoryEntrySchema = z.object({
  state: z.enum(ActivationState),
  /** Host holding (or acquiring) the activation; absent when sleeping. */
  hostId: z.string().optional(),
  /** Process incarnation of that host: a restarted host process has a new one. */
  incarnation: z.string().optional(),
  /** Fencing token, incremented on every transition to ACTIVATING. */
  epoch: z.number().int().nonnegative(),
  /** Job the activation works for, when the activation request named one. */
  jobId: z.string().optional(),
  updatedAtMs: z.number(),
  /** Why the actor is STOPPED or was last put to sleep. */
  reason: z.string().optional(),
  /**
   * Put to sleep by recovery (its host was lost, or its activation failed or hung), not
   * passivated: it may have posts nobody will wake it for, so the placement sweep checks it until
   * it finds none (and clears this) or re-places it.
   */
  recover: z.boolean().optional(),
  /**
   * The actor's records may be deleted once its job (`jobId`) has finished (the definition's
   * `retireWithJob`): kept, with `jobId`, through every later write of the entry.
   */
  retireWithJob: z.literal(true).optional(),
});
/** A decoded directory entry. */
export type DirectoryEntry = z.infer<typeof DirectoryEntrySchema>;

/** A directory entry with the KV revision it was read at (for compare-and-set). */
export interface VersionedEntry {
  entry: DirectoryEntry;
  /** KV revision; 0 when the key does not exist yet. */
  revision: number;
}

/**
 * The fields of `entry` that say which job the actor works for (`jobId`, `retireWithJob`): every
 * writer of an entry carries them over, so a sleeping or stopped actor still names its job.
 */
export function jobScopeOf(
  entry: Pick<DirectoryEntry, 'jobId' | 'retireWithJob'>,
): Pick<DirectoryEntry, 'jobId' | 'retireWithJob'> {
  return {
    ...(entry.jobId ? { jobId: entry.jobId } : {}),
    ...(entry.retireWithJob ? { retireWithJob: true as const } : {}),
  };
}

/** States in which an activation exists or is being created. */
export function isLiveState(state: ActivationState): boolean {
  return state === 'ACTIVATING' || state === 'IDLE' || state === 'RUNNING';
}

/**
 * The actor directory: one KV entry per actor, changed only by compare-and-set on its revision,
 * so at most one activation of an address exists in the whole cluster.
 */
export class Directory {
  private readonly writer: KvWriter;

  constructor(
    private readonly kv: KV,
    /** The connection `kv` uses: writes go through its `Requester` (see {@link KvWriter}). */
    nc: NatsConnection,
  ) {
    this.writer = new KvWriter(nc, kv);
  }

  /** Reads an entry; a missing key is a SLEEPING actor at epoch 0 (revision 0). */
  async get(addr: ActorAddress): Promise<VersionedEntry> {
    const e = await this.writer.get(directoryKey(addr));
    if (!e || e.operation !== 'PUT' || e.value.length === 0) {
      return {
        entry: { state: 'SLEEPING', epoch: 0, updatedAtMs: 0 },
        revision: e?.revision ?? 0,
      };
    }
    return { entry: DirectoryEntrySchema.parse(decodeJson(e.value)), revision: e.revision };
  }

  /**
   * Writes `next` only if the entry is still at `revision`. Returns the new revision, or
   * `undefined` when another writer got there first (the caller re-reads and decides again).
   */
  async compareAndSet(
    addr: ActorAddress,
    revision: number,
    next: DirectoryEntry,
  ): Promise<number | undefined> {
    const key = directoryKey(addr);
    // Our own, typed value: validated when read back, not on every write.
    const data = encodeJson(next);
    try {
      // A create succeeds on a missing or deleted key and fails if a live value exists.
      return revision === 0
        ? await this.writer.create(key, data)
        : await this.writer.update(key, data, revision);
    } catch (err) {
      if (isWrongLastSequence(err)) return undefined;
      throw new TroupeError('UNAVAILABLE', 'directory write failed', { cause: err });
    }
  }

  /**
   * Deletes the entry for good (no marker left) if it is still the one written at `revision`: a
   * later write survives. Watchers are not told. After it the actor is unknown: a new activation
   * starts it afresh at epoch 1.
   */
  async remove(addr: ActorAddress, revision: number): Promise<void> {
    try {
      await removeKvKey(this.kv, directoryKey(addr), revision);
    } catch (err) {
      throw new TroupeError('UNAVAILABLE', 'directory write failed', { cause: err });
    }
  }

  /** Lists every entry (used by the local placer's recovery sweep). */
  async list(): Promise<Map<string, VersionedEntry>> {
    const out = new Map<string, VersionedEntry>();
    for (const key of await kvKeys(this.kv)) {
      const e = await this.kv.get(key);
      if (!e || e.operation !== 'PUT' || e.value.length === 0) continue;
      const parsed = DirectoryEntrySchema.safeParse(decodeJson(e.value));
      if (parsed.success) out.set(key, { entry: parsed.data, revision: e.revision });
    }
    return out;
  }
}
