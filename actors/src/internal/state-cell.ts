import {
  type ActorAddress,
  ErrorReason,
  formatAddress,
  fromZodError,
  hasReason,
  TroupeError,
} from '@troupe/proto';
import { type AnyActorDefinition } from '../actor-definition';
import {
  FencedError,
  type StateRecord,
  type StateStore,
  type StoredState,
  storeOutageOf,
} from '../state-store';
import { decodeJson, encodeJson } from './json-codec';

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
      stored = await this.store.read(this.address);
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
    try {
      this.revision = await this.store.commitEncoded(this.address, this.revision, data);
    } catch (err) {
      if (!hasReason(err, ErrorReason.FENCED)) this.unsure = true;
      throw err;
    }
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
