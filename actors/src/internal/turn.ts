import { setMaxListeners } from 'node:events';
import { type ActorAddress, type Logger, TroupeError } from '@troupe/proto';
import { type ActorContext, type InboxMessage, type MessageInfo } from '../actor-context';
import { type RefFactory } from '../ref-factory';
import { type HandlerResult, type InvalidMessage } from '../actor-definition';
import { type StateCell } from './state-cell';

/** What a turn needs of the activation it runs in. */
export interface TurnOwner {
  readonly address: ActorAddress;
  readonly epoch: number;
  readonly log: Logger;
  /** Aborted when the activation is fenced or its host shuts down (parent of `ctx.signal`). */
  readonly signal: AbortSignal;
  /** The actor's state and inbox cursor, committed by checkpoints. */
  readonly cell: StateCell;
  /** Whether checkpoints validate the state. */
  readonly validatesCheckpoints: boolean;
  /** Refs whose sends carry this actor as sender. */
  refsForSelf(): RefFactory;
  /** Messages posted after `after`, validated; invalid ones are dead-lettered and skipped. */
  drainAfter(after: number): Promise<{ messages: InboxMessage[]; through: number }>;
  /** Calls `listener` at each mail hint until the returned function is called. */
  addMailListener(listener: () => void): () => void;
  /** See {@link ActorContext.passivateWhenIdle}. */
  passivateWhenIdle(): void;
}

/** What runs turns: a {@link TurnOwner} that validates messages and calls their handlers. */
export interface TurnRunner extends TurnOwner {
  /** The actor's address as `kind/id`. */
  readonly key: string;
  /** The message checked against its type's schema, or INVALID_ARGUMENT naming the field. */
  validate(type: string, payload: unknown): unknown;
  /** Runs the handler of the turn's message type (a turn at a time). */
  runHandler(turn: Turn, payload: unknown): Promise<HandlerResult<unknown> | void>;
  /** Runs the definition's `onInvalid` for a posted message; returns the state to commit. */
  runOnInvalid(turn: Turn, invalid: InvalidMessage): Promise<unknown>;
  /** Whether asks or tells wait for a turn: a batch of posts ends early for them. */
  readonly coreWaiting: boolean;
  /** Whether a turn asked to end the activation once idle ({@link TurnOwner.passivateWhenIdle}). */
  readonly passivating: boolean;
  /**
   * Whether the activation's turns were abandoned mid-way: a newer activation owns the actor
   * (fenced), or the host's shutdown grace ended. Nothing the current batch did is kept, and its
   * asks are told the actor moved.
   */
  readonly abandoned: boolean;
}

/** State of one turn: its deadline, what it drained, its checkpoints. */
export class Turn {
  drainedThrough: number;
  private closed = false;
  private readonly listenerRemovers: (() => void)[] = [];

  constructor(
    readonly owner: TurnOwner,
    readonly info: MessageInfo,
    readonly resumed: boolean,
    drainedFrom: number,
    private readonly deadlineMs?: number,
  ) {
    this.drainedThrough = drainedFrom;
  }

  signal(parent: AbortSignal): AbortSignal {
    if (!this.deadlineMs) return parent;
    const remaining = Math.max(0, this.deadlineMs - Date.now());
    const signal = AbortSignal.any([parent, AbortSignal.timeout(remaining)]);
    // A turn may fan out any number of calls at once (a job's batch of dispatches), each
    // listening to this signal.
    setMaxListeners(0, signal);
    return signal;
  }

  async drain(): Promise<InboxMessage[]> {
    if (this.closed) throw new TroupeError('INTERNAL', 'drainInbox() called after the turn ended');
    const from = Math.max(this.drainedThrough, this.owner.cell.cursor, this.info.seq ?? 0);
    const { messages, through } = await this.owner.drainAfter(from);
    this.drainedThrough = through;
    return messages;
  }

  async checkpoint(state: unknown, keep: 'value' | 'encoded'): Promise<void> {
    if (this.closed) throw new TroupeError('INTERNAL', 'checkpoint() called after the turn ended');
    const cursor = this.owner.cell.cursor;
    if (this.info.via === 'post' && this.info.seq !== undefined) {
      await this.owner.cell.commit(
        state,
        cursor,
        { seq: this.info.seq, drainedThrough: Math.max(this.drainedThrough, this.info.seq) },
        keep,
      );
    } else {
      await this.owner.cell.commit(state, Math.max(cursor, this.drainedThrough), undefined, keep);
    }
  }

  /** See {@link ActorContext.onMail}; the listener is removed when the turn ends. */
  onMail(listener: () => void): () => void {
    if (this.closed) return () => undefined;
    const remove = this.owner.addMailListener(listener);
    this.listenerRemovers.push(remove);
    return remove;
  }

  close(): void {
    this.closed = true;
    for (const remove of this.listenerRemovers.splice(0)) remove();
  }
}

/**
 * What a handler sees of one turn. A class rather than an object literal: signals and refs are
 * built on first use (most turns never touch them, and AbortSignal.any plus a timer per message
 * would dominate a short handler), and prototype getters make the per-message object cheap.
 */
export class TurnContext implements ActorContext<unknown> {
  private signalCache?: AbortSignal;
  private refsCache?: RefFactory;

  constructor(private readonly turn: Turn) {}

  get self(): ActorAddress {
    return this.turn.owner.address;
  }
  get epoch(): number {
    return this.turn.owner.epoch;
  }
  get log(): Logger {
    return this.turn.owner.log;
  }
  get signal(): AbortSignal {
    return (this.signalCache ??= this.turn.signal(this.turn.owner.signal));
  }
  get message(): MessageInfo {
    return this.turn.info;
  }
  get resumed(): boolean {
    return this.turn.resumed;
  }
  get refs(): RefFactory {
    return (this.refsCache ??= this.turn.owner.refsForSelf());
  }
  drainInbox(): Promise<InboxMessage[]> {
    return this.turn.drain();
  }
  onMail(listener: () => void): () => void {
    return this.turn.onMail(listener);
  }
  passivateWhenIdle(): void {
    this.turn.owner.passivateWhenIdle();
  }
  checkpoint(state: unknown): Promise<void> {
    // Validation copies the state; without it the commit keeps the encoded copy instead (the
    // turn goes on changing its object, and a retry must start from what was committed).
    const owner = this.turn.owner;
    return owner.validatesCheckpoints
      ? this.turn.checkpoint(owner.cell.validated(state), 'value')
      : this.turn.checkpoint(state, 'encoded');
  }
}
