import {
  type ActorAddress,
  ErrorReason,
  formatAddress,
  fromZodError,
  hasReason,
  raceSignal,
  TroupeError,
} from '@troupe/proto';
import { type AnyActorDefinition } from '../actor-definition';
import {
  FencedError,
  type StateRecord,
  type StateStore,
  type StoredState,
  storeOutageOf,
  StoreUnavailableError,
} from '../state-store';
import { setTimeout as delay } from 'node:timers/promises';
import { decodeJson, encodeJson } from './json-codec';

/** How long one state write waits for the store's answer before reading what became of it. */
const COMMIT_TRY_MS = 2_000;
/** How long a commit keeps finding out and writing again before it fails as a store outage. */
const COMMIT_PATIENCE_MS = 5_000;
/** Pause between reads (and writes) of a commit the store does not answer. */
const COMMIT_RETRY_PAUSE_MS = 250;

/**
 * An activation's actor state: the value handlers see, the inbox cursor, the turn a checkpoint
 * left in progress, and the KV revision they were committed at. State and cursor are committed
 * together by compare-and-set on that revision; a stale revision is a fenced activation.
 */
export class StateCell {
  /** KV revision of the last commit (0: the actor has never committed). */
  private revision = 0;
  /**
   * Inbox sequence of the last message applied: committed, or moved by a drain in the current
   * group of asks/tells (which commits it, or puts it back).
   */
  cursor = 0;
  /** The checkpointed turn a replay resumes: its message and how far its drains got. */
  pendingTurn: StateRecord['turn'];
  private value: unknown;
  /** The committed record, encoded, after a checkpoint that kept no copy (decoded on demand). */
  private encoded: Uint8Array | undefined;
  /**
   * What the last commit (or the load) left: {@link rollback} returns to it when changes made in
   * memory since (a batch of posted messages) could not be committed.
   */
  private committed: {
    value: unknown;
    encoded: Uint8Array | undefined;
    cursor: number;
    pendingTurn: StateRecord['turn'];
  } = { value: undefined, encoded: undefined, cursor: 0, pendingTurn: undefined };
  /**
   * Set when a commit failed without an answer from the store (a timeout, a connection lost): it
   * may have landed, so the revision and state in memory may be behind the store's, and a newer
   * activation may own the actor by now. {@link settle} finds out before the next turn.
   */
  private unsure = false;

  constructor(
    private readonly def: AnyActorDefinition,
    private readonly address: ActorAddress,
    private readonly epoch: number,
    private readonly store: StateStore,
  ) {}

  /** Takes the record a claim returned (none: the kind's initial state). */
  load(claimed: { record: StateRecord | undefined; revision: number }): void {
    this.unsure = false;
    this.revision = claimed.revision;
    this.cursor = claimed.record?.cursor ?? 0;
    this.pendingTurn = claimed.record?.turn;
    const loaded = claimed.record ? this.def.state.safeParse(claimed.record.data) : undefined;
    if (loaded && !loaded.success) {
      throw new TroupeError(
        'INTERNAL',
        `stored state of ${formatAddress(this.address)} does not match its schema`,
        {
          cause: fromZodError(loaded.error, { prefix: 'state' }),
        },
      );
    }
    this.state = loaded ? loaded.data : this.def.initialState(this.address.id);
    this.remember();
  }

  /**
   * After a commit that may have landed unanswered ({@link unsure}): reads the record. Written by
   * another epoch (or removed): throws {@link FencedError}, so the activation stops instead of
   * answering from state a newer one has moved past (chaos seed 8105: a sandbox's fenced
   * activation said its command had never started, and the task ran it again). Written by this
   * epoch at a newer revision: that commit landed, and its record is taken as the state. A read
   * that fails throws the store's outage, and the next turn tries again.
   */
  async settle(): Promise<void> {
    if (!this.unsure) return;
    let stored: StoredState | undefined;
    try {
      stored = await this.readWithin(COMMIT_TRY_MS);
    } catch (err) {
      throw storeOutageOf(err) ?? err;
    }
    if (!stored) {
      if (this.revision !== 0) throw new FencedError(this.address, 'its state record was removed');
    } else if (stored.record.epoch !== this.epoch) {
      throw new FencedError(this.address, `state has epoch ${stored.record.epoch}`);
    } else if (stored.revision !== this.revision) {
      this.load(stored);
    }
    this.unsure = false;
  }

  /**
   * Writes `data` by compare-and-set on the revision of the last commit; returns its revision.
   * A write the store did not answer (a request lost in a partition, a stream electing a leader,
   * an answer slower than {@link COMMIT_TRY_MS}) may have landed: the record is read to find out,
   * and the write is made again while it has not, for {@link COMMIT_PATIENCE_MS} in all. Landed
   * (this epoch's record at a newer revision: only this activation writes with its epoch, one
   * commit at a time), it is the commit; another epoch's record fences the activation. Still
   * unanswered at the end, it fails with the store's outage and the activation is {@link unsure}.
   * Before, a commit sent while its node agent was cut off for 2 s failed its turn after 5 s
   * (chaos seed 8436: a sandbox's create failed, and its task's retry came 8 s after the heal).
   */
  private async write(data: Uint8Array): Promise<number> {
    const deadline = Date.now() + COMMIT_PATIENCE_MS;
    let unanswered: unknown;
    for (;;) {
      try {
        return await this.store.commitEncoded(this.address, this.revision, data, COMMIT_TRY_MS);
      } catch (err) {
        const fenced = hasReason(err, ErrorReason.FENCED);
        // A refused write (too large) never landed; a fence before any unanswered write is one.
        if (fenced ? unanswered === undefined : !hasReason(err, ErrorReason.STORE_UNAVAILABLE)) {
          if (!fenced) this.unsure = true;
          throw err;
        }
        // A fence after an unanswered write may be that write, landed late: read to find out.
        if (!fenced) unanswered = err;
      }
      const landed = await this.findOut(deadline, unanswered);
      if (landed !== undefined) return landed;
    }
  }

  /**
   * After an unanswered write: the revision it landed at, or `undefined` when the record is still
   * at the last commit's (write again). Throws {@link FencedError} when another epoch wrote, and
   * the outage (the activation left unsure) when the store cannot tell before `deadline`.
   */
  private async findOut(deadline: number, unanswered: unknown): Promise<number | undefined> {
    let last = unanswered;
    for (let first = true; ; first = false) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        this.unsure = true;
        throw last;
      }
      if (!first) await delay(Math.min(COMMIT_RETRY_PAUSE_MS, remaining));
      let stored: StoredState | undefined;
      try {
        stored = await this.readWithin(Math.min(COMMIT_TRY_MS, remaining));
      } catch (err) {
        const outage = hasReason(err, ErrorReason.STORE_UNAVAILABLE) ? err : storeOutageOf(err);
        if (!outage) {
          this.unsure = true;
          throw err;
        }
        last = outage;
        continue;
      }
      if (!stored) {
        if (this.revision !== 0)
          throw new FencedError(this.address, 'its state record was removed');
        return undefined;
      }
      if (stored.record.epoch !== this.epoch) {
        throw new FencedError(this.address, `state has epoch ${stored.record.epoch}`);
      }
      if (stored.revision !== this.revision) return stored.revision;
      // Not landed (or not yet: a late landing fences the next write, which reads again).
      await delay(Math.min(COMMIT_RETRY_PAUSE_MS, Math.max(0, deadline - Date.now())));
      return undefined;
    }
  }

  /**
   * The state record, read with an answer within `ms` or failed as a store outage. The client's
   * own timeout (5 s) would carry one hung read past a commit's whole patience (chaos run 13: a
   * commit after nats#0's restart ended on such a read); a read asked again may be answered by another
   * replica of the bucket's stream (reads are direct gets, which every replica serves). An answer
   * after `ms` is dropped.
   */
  private async readWithin(ms: number): Promise<StoredState | undefined> {
    const silent = AbortSignal.timeout(ms);
    try {
      return await raceSignal(this.store.read(this.address), silent);
    } catch (err) {
      if (silent.aborted) throw new StoreUnavailableError(err);
      throw err;
    }
  }

  /** True when the cursor moved in memory since the last commit (messages applied, not committed). */
  get uncommitted(): boolean {
    return this.cursor !== this.committed.cursor;
  }

  /** Drops what changed in memory since the last commit (or the load). */
  rollback(): void {
    const c = this.committed;
    this.value = c.value;
    this.encoded = c.encoded;
    this.cursor = c.cursor;
    this.pendingTurn = c.pendingTurn;
  }

  private remember(): void {
    this.committed = {
      value: this.value,
      encoded: this.encoded,
      cursor: this.cursor,
      pendingTurn: this.pendingTurn,
    };
  }

  /** The current state: the last committed, or what a handler of the current batch left. */
  get state(): unknown {
    if (this.encoded !== undefined) {
      this.value = (decodeJson(this.encoded) as StateRecord).data;
      this.encoded = undefined;
    }
    return this.value;
  }

  set state(state: unknown) {
    this.value = state;
    this.encoded = undefined;
  }

  /** `state` checked against the kind's schema (the parsed copy), or an INTERNAL error. */
  validated(state: unknown): unknown {
    const parsed = this.def.state.safeParse(state);
    if (!parsed.success) {
      throw new TroupeError(
        'INTERNAL',
        `handler of ${formatAddress(this.address)} produced an invalid state`,
        {
          cause: fromZodError(parsed.error, { prefix: 'state' }),
        },
      );
    }
    return parsed.data;
  }

  /**
   * Commits state and cursor in one compare-and-set; a stale revision fences the activation.
   * `keep: 'encoded'`: the caller goes on changing `state` (a checkpoint that skips validation,
   * which would have copied it); the state is encoded before this yields, and the committed
   * version is decoded again only if needed (a retry of the message, the next message).
   */
  async commit(
    state: unknown,
    cursor: number,
    turn?: StateRecord['turn'],
    keep: 'value' | 'encoded' = 'value',
  ): Promise<void> {
    const record: StateRecord = {
      epoch: this.epoch,
      cursor,
      data: state,
      ...(turn ? { turn } : {}),
    };
    const data = encodeJson(record);
    this.revision = await this.write(data);
    if (keep === 'encoded') {
      this.value = undefined;
      this.encoded = data;
    } else {
      this.state = state;
    }
    this.cursor = cursor;
    // A retry of this message in this activation resumes from the checkpoint, like a replay.
    this.pendingTurn = turn;
    this.remember();
  }
}
