import { type ActorAddress, type Logger } from '@troupe/proto';
import { type RefFactory } from './ref-factory';

/** How a message reached the actor. */
export type DeliveryMode = 'ask' | 'tell' | 'post';

/** Metadata of the message a turn is handling. */
export interface MessageInfo {
  type: string;
  via: DeliveryMode;
  /** Inbox stream sequence, for posted messages. */
  seq?: number;
  /** `dedupeId` the sender gave, for posted messages. */
  dedupeId?: string;
  /** Address of the sending actor, when it sent from inside a turn. */
  sender?: ActorAddress;
}

/** A posted message handed out by {@link ActorContext.drainInbox}, validated. */
export interface InboxMessage {
  type: string;
  payload: unknown;
  seq: number;
  dedupeId?: string;
  sender?: ActorAddress;
}

/** What a handler sees of the runtime during one turn. */
export interface ActorContext<S> {
  /** This actor's address. */
  readonly self: ActorAddress;
  /** Fencing epoch of this activation. */
  readonly epoch: number;
  /** Logger bound to the actor address. */
  readonly log: Logger;
  /**
   * Aborted when the turn must stop: the ask's deadline passed, the host is shutting down, or the
   * activation was fenced by a newer one. Pass it to everything the turn starts.
   */
  readonly signal: AbortSignal;
  /** The message being handled. */
  readonly message: MessageInfo;
  /** True when this posted message is being replayed after a crash that followed a checkpoint. */
  readonly resumed: boolean;
  /** Refs to other actors; sends made through them carry this actor as sender. */
  readonly refs: RefFactory;
  /**
   * Takes the posted messages that arrived since the turn began (a safe point, e.g. a tool
   * boundary). They count as handled by this turn: they are not delivered again, even after a
   * crash once the turn has checkpointed or committed.
   */
  drainInbox(): Promise<InboxMessage[]>;
  /**
   * Calls `listener` (synchronously, from the connection's callback) when a "you have mail" hint
   * says a message was posted to this actor during the turn, so a long wait (a model call, a
   * child's result) can drain the inbox without waiting for its next safe point. Best effort:
   * hints are core NATS (at most once) and may name a message already drained; the inbox is
   * the truth. Removed by the returned function, or when the turn ends.
   */
  onMail(listener: () => void): () => void;
  /**
   * Commits `state` now, in the middle of a long turn. After a crash the current message is
   * replayed with `resumed: true` and the checkpointed state, so work resumes from here.
   */
  checkpoint(state: S): Promise<void>;
  /**
   * Passivates this activation as soon as it is idle: once the turn has ended (and committed)
   * and no message waits, instead of after the actor's `idleTimeoutMs`. For an actor whose work
   * is done until someone sends it more (a job's task actor after its attempt): it holds no
   * subscription, timer or memory in the meantime. The next message activates it again.
   */
  passivateWhenIdle(): void;
}
