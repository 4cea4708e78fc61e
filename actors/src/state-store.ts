import {
  type ActorAddress,
  ErrorReason,
  parseActorKey,
  stateKey,
  stateKindFilter,
  TroupeError,
} from '@troupe/proto';
import { type KV, type KvEntry } from '@nats-io/kv';
import { type NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';
import { isWrongLastSequence } from './internal/kv-errors';
import { KvWriter } from './kv-writer';
import { STATE_STORE_TIMEOUT_MS } from './infrastructure';
import { removeKvKey } from './internal/subject-delete';
import { decodeJson, encodeJson } from './internal/json-codec';
import { isTransientNatsError } from './internal/nats-errors';

/**
 * What is persisted per actor: the user state, the inbox cursor, and the fencing epoch of the
 * activation that wrote it. State and cursor change together in one compare-and-set.
 */
export const StateRecordSchema = z.object({
  /** Epoch of the activation that wrote this record. */
  epoch: z.number().int().nonnegative(),
  /** Stream sequence of the last inbox message fully applied (0 = none). */
  cursor: z.number().int().nonnegative(),
  /**
   * A turn in progress that has checkpointed: the message being handled and how far its
   * `drainInbox()` calls got. On replay the same message is redelivered with `resumed: true` and
   * drained messages are not delivered twice.
   */
  turn: z
    .object({ seq: z.number().int().positive(), drainedThrough: z.number().int().nonnegative() })
    .optional(),
  /** The actor's own state (validated against its schema on load). */
  data: z.unknown(),
});
/** A decoded state record. */
export type StateRecord = z.infer<typeof StateRecordSchema>;

/** A stored state record with its KV revision. */
export interface StoredState {
  record: StateRecord;
  revision: number;
}

/**
 * Thrown (code UNAVAILABLE, reason `FENCED`, not retryable) when a newer activation owns the actor's
 * state. Test for it with `hasReason(err, ErrorReason.FENCED)`.
 */
export class FencedError extends TroupeError {
  constructor(addr: ActorAddress, detail: string) {
    super('UNAVAILABLE', `activation of ${addr.kind}/${addr.id} was fenced: ${detail}`, {
      retryable: false,
      reason: ErrorReason.FENCED,
    });
  }
}

/**
 * Thrown (code UNAVAILABLE, reason `STORE_UNAVAILABLE`, retryable) when a store an actor depends on — its state, or one of the
 * actor's own (an agent's trajectory) — cannot be reached: NATS down, or a JetStream stream
 * electing a new leader after a server loss. Infrastructure trouble, never the fault of the
 * message being handled: the runtime retries the message without counting an attempt towards its
 * dead letter, also when a handler throws it (or an error caused by it): test for it with
 * `hasReason(err, ErrorReason.STORE_UNAVAILABLE)`.
 */
export class StoreUnavailableError extends TroupeError {
  constructor(cause: unknown, store = 'actor state store') {
    super('UNAVAILABLE', `${store} unavailable`, {
      cause,
      reason: ErrorReason.STORE_UNAVAILABLE,
    });
  }
}

/**
 * `err` as a store outage (a {@link StoreUnavailableError} naming `store`) when NATS failed it
 * transiently (nobody answered, a timeout, a reconnecting connection); `undefined` when it is
 * something that can never succeed that way (a record over `max_payload`), which fails the turn
 * like any handler error.
 */
export function storeOutageOf(err: unknown, store?: string): StoreUnavailableError | undefined {
  return isTransientNatsError(err) ? new StoreUnavailableError(err, store) : undefined;
}

/**
 * Persisted actor state in KV, written only by compare-and-set on the revision the writer last
 * saw. An activation first *claims* the record with its epoch; from then on any write by an older
 * activation fails, so a partitioned host can never overwrite a newer one.
 */
export class StateStore {
  private readonly writer: KvWriter;

  constructor(
    private readonly kv: KV,
    /** The connection `kv` uses: writes go through its `Requester` (see {@link KvWriter}). */
    nc: NatsConnection,
  ) {
    this.writer = new KvWriter(nc, kv, STATE_STORE_TIMEOUT_MS);
  }

  /**
   * Follows the commits of actors of `kind` made after `afterRevision` (0: every record, current
   * values first): each as the actor id and the record, or `undefined` when the record was
   * deleted. Ends when `signal` aborts. Only what reached the bucket is seen: a turn's state is
   * visible here once it has committed.
   */
  async *watchKind(
    kind: string,
    afterRevision: number,
    signal: AbortSignal,
  ): AsyncGenerator<{ id: string; record: StateRecord | undefined; revision: number }> {
    if (signal.aborted) return;
    const watcher = await this.kv.watch({
      key: stateKindFilter(kind),
      ...(afterRevision > 0 ? { resumeFromRevision: afterRevision + 1 } : {}),
    });
    const stop = () => watcher.stop();
    signal.addEventListener('abort', stop, { once: true });
    try {
      for await (const e of watcher) {
        const change = recordChange(e);
        if (change) yield { ...change, revision: e.revision };
      }
    } finally {
      signal.removeEventListener('abort', stop);
      watcher.stop();
    }
  }

  /**
   * Deletes the record and its history for good (no marker left): for an actor being retired,
   * whose directory entry already fences every activation (docs/actors.md, Retirement).
   */
  async remove(addr: ActorAddress): Promise<void> {
    try {
      await removeKvKey(this.kv, stateKey(addr));
    } catch (err) {
      throw storeError(err);
    }
  }

  /** Reads the record; `undefined` when the actor has never committed. */
  async read(addr: ActorAddress): Promise<StoredState | undefined> {
    const e = await this.writer.get(stateKey(addr));
    if (!e || e.operation !== 'PUT' || e.value.length === 0) return undefined;
    return { record: StateRecordSchema.parse(decodeJson(e.value)), revision: e.revision };
  }

  /**
   * Takes ownership for `epoch`: re-writes the current record stamped with the new epoch.
   * Fails with {@link FencedError} when a record of a newer epoch exists. An actor that has never
   * committed costs one read and no write. `prefetched`: the result of a {@link read} the caller
   * already made (after the directory named this activation, or concurrently with that claim).
   */
  async claim(
    addr: ActorAddress,
    epoch: number,
    prefetched?: { current: StoredState | undefined },
  ): Promise<{ record: StateRecord | undefined; revision: number }> {
    for (let attempt = 0; attempt < 5; attempt++) {
      // A read the caller made in parallel with other start-up work saves a round trip; a retry
      // after a conflict always reads again.
      const current = attempt === 0 && prefetched ? prefetched.current : await this.read(addr);
      if (current && current.record.epoch > epoch) {
        throw new FencedError(addr, `state has epoch ${current.record.epoch} > ${epoch}`);
      }
      if (!current) return { record: undefined, revision: 0 };
      const claimed: StateRecord = { ...current.record, epoch };
      try {
        const revision = await this.writer.update(
          stateKey(addr),
          encodeJson(claimed),
          current.revision,
        );
        return { record: claimed, revision };
      } catch (err) {
        if (!isWrongLastSequence(err)) throw storeError(err);
      }
    }
    throw new FencedError(addr, 'state kept changing while claiming');
  }

  /**
   * Commits a record if the stored revision is still `revision` (0: the key must not exist).
   * Returns the new revision; throws {@link FencedError} when someone else wrote in between.
   */
  async commit(addr: ActorAddress, revision: number, record: StateRecord): Promise<number> {
    return this.commitEncoded(addr, revision, encodeJson(record));
  }

  /**
   * {@link commit} of a record the caller has encoded (as JSON, UTF-8). `timeoutMs` bounds the
   * wait for the store's answer (default: the bucket client's timeout). A first commit is a put
   * expecting no record, not `kv.create`: that reads the key after any failure, and a create nobody
   * answered took two timeouts (chaos seed 9429). A key whose record was removed has no marker
   * left ({@link remove}), so the put succeeds there too.
   */
  async commitEncoded(
    addr: ActorAddress,
    revision: number,
    data: Uint8Array,
    timeoutMs?: number,
  ): Promise<number> {
    const key = stateKey(addr);
    try {
      return await this.writer.put(key, data, {
        previousSeq: revision,
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
      });
    } catch (err) {
      if (isWrongLastSequence(err)) {
        throw new FencedError(addr, `state revision ${revision} is no longer current`);
      }
      throw storeError(err);
    }
  }
}

/**
 * The actor id and record of a KV entry (`record` undefined for a deletion); `undefined` for a
 * key or a value this version did not write.
 */
function recordChange(e: KvEntry): { id: string; record: StateRecord | undefined } | undefined {
  const addr = parseActorKey(e.key);
  if (!addr) return undefined;
  if (e.operation !== 'PUT' || e.value.length === 0) return { id: addr.id, record: undefined };
  try {
    const parsed = StateRecordSchema.safeParse(decodeJson(e.value));
    return parsed.success ? { id: addr.id, record: parsed.data } : undefined;
  } catch {
    return undefined;
  }
}

function storeError(err: unknown): TroupeError {
  return (
    storeOutageOf(err) ??
    new TroupeError('UNAVAILABLE', 'actor state store refused the write', { cause: err })
  );
}
