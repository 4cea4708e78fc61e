import { delay, ErrorReason, hasReason, toTroupeError, type TroupeError } from '@troupe/proto';
import { type JetStreamClient } from '@nats-io/jetstream';
import { type InboxMessage } from '../actor-context';
import { storeOutageOf } from '../state-store';
import { deadLetter } from './dead-letter';
import { inboxInfo, type InboxReader, type StoredInboxMessage } from './inbox-reader';
import { decodeJson } from './json-codec';
import { Turn, type TurnRunner } from './turn';

/** Most posted messages handled under one commit. */
export const MAX_POST_BATCH = 64;

/**
 * An activation's posted messages. Those waiting in the inbox are handled in order, each in its
 * own turn, and committed together with the inbox cursor in one compare-and-set (a group commit,
 * as for asks and tells): each handler sees the state the previous one left. A message whose
 * handler keeps failing is retried with backoff and, after `maxAttempts`, dead-lettered (an
 * invalid one at once, after the definition's `onInvalid`), and the cursor moves on; the messages
 * of its batch before it are committed first, so it fails alone. Failures of the runtime's own
 * store are not the message's fault: they count no attempt, and the whole uncommitted batch is
 * handled again.
 */
export class PostedMessages {
  /** Failed attempts per message (by inbox sequence), for its dead letter; made on first use. */
  private failures?: Map<number, number>;

  constructor(
    private readonly runner: TurnRunner,
    private readonly inbox: InboxReader,
    private readonly dlq: { readonly js: JetStreamClient; readonly cluster: string },
    private readonly maxAttempts: number,
  ) {}

  /**
   * Handles the next posted message (the one after the cursor) and those after it that are
   * already in the inbox, up to {@link MAX_POST_BATCH}, then commits them at once. A batch ends
   * early at a message that is invalid or whose handler fails (the messages before it are
   * committed, then it is dealt with alone), and after a turn that drained the inbox (what it
   * drained is its own).
   */
  async handle(first: StoredInboxMessage): Promise<void> {
    const { cell } = this.runner;
    let stored: StoredInboxMessage | null = first;
    let applied = 0;
    try {
      while (stored) {
        if ((await this.apply(stored)) === 'ended') return;
        // An ask waiting ends the batch: it is answered after this commit, not after 64 turns.
        if (++applied >= MAX_POST_BATCH || cell.cursor > stored.seq || this.runner.coreWaiting) {
          break;
        }
        // An activation about to passivate reads its inbox once more after it has released the
        // directory entry (a post that came meanwhile wakes a new one): a read now as well would
        // only find what no hint named, which that read finds too.
        if (this.runner.passivating && this.inbox.leaveForPassivation(stored.seq)) break;
        stored = await this.inbox.readMore(stored.seq);
      }
      await this.commitApplied();
    } catch (err) {
      // Fenced (the activation stops) or the store is unreachable: nothing of this batch past the
      // last commit stays; the pump retries it from there after a pause.
      cell.rollback();
      throw err;
    }
  }

  /**
   * Runs one message of a batch. 'applied': its handler's state and the cursor past it are in
   * the cell, not yet committed. 'ended': it was invalid or its handler failed; the messages
   * applied before it are committed, and it was dead-lettered (the cursor moved past it) or waits
   * for its retry.
   */
  private async apply(stored: StoredInboxMessage): Promise<'applied' | 'ended'> {
    const { cell } = this.runner;
    const info = inboxInfo(stored);
    const pending = cell.pendingTurn;
    const resumed = pending?.seq === stored.seq;
    const drainedFrom = resumed ? (pending?.drainedThrough ?? stored.seq) : stored.seq;
    cell.pendingTurn = undefined;
    const turn = new Turn(this.runner, info, resumed, drainedFrom);
    let raw: unknown;
    let payload: unknown;
    try {
      raw = decodeJson(stored.data);
      payload = this.runner.validate(info.type, raw);
    } catch (err) {
      await this.commitApplied();
      const error = toTroupeError(err);
      const state = await this.runner.runOnInvalid(turn, { type: info.type, payload: raw, error });
      await this.giveUp(stored, error, 1);
      await this.commit(state, stored.seq);
      return 'ended';
    }
    try {
      const result = await this.runner.runHandler(turn, payload);
      cell.state = result?.state !== undefined ? cell.validated(result.state) : cell.state;
      cell.cursor = Math.max(stored.seq, turn.drainedThrough);
      // A checkpoint of this turn is superseded by its result.
      cell.pendingTurn = undefined;
      this.failures?.delete(stored.seq);
      return 'applied';
    } catch (err) {
      // The runtime's own store (the commit, or a checkpoint inside the turn) was unreachable:
      // infrastructure trouble, not the message's fault. The pump retries the message after a
      // pause without counting an attempt, so a JetStream leader election dead-letters nothing.
      if (hasReason(err, ErrorReason.FENCED) || hasReason(err, ErrorReason.STORE_UNAVAILABLE))
        throw err;
      // So is a JetStream store the handler uses itself (the job actor's plan in the object
      // store) when NATS fails it transiently: counted as attempts, a job's `start` was
      // dead-lettered 3 s into a NATS server's loss and the job never ran (chaos seed 8011).
      const outage = storeOutageOf(err, 'a store the handler uses');
      if (outage) throw outage;
      // What the batch applied before this message is kept; this one fails alone.
      await this.commitApplied();
      const attempts = (this.failures?.get(stored.seq) ?? 0) + 1;
      (this.failures ??= new Map()).set(stored.seq, attempts);
      const error = toTroupeError(err);
      this.runner.log.warn(
        { err, seq: stored.seq, attempts },
        'handler failed on a posted message',
      );
      if (attempts >= this.maxAttempts || (!error.retryable && error.code === 'INVALID_ARGUMENT')) {
        this.failures?.delete(stored.seq);
        await this.giveUp(stored, error, attempts);
        await this.commit(cell.state, stored.seq);
      } else {
        // Back off before the retry; the message stays first in line (turn order is kept).
        await delay(Math.min(2_000, 50 * 4 ** (attempts - 1)), undefined, { unref: true });
      }
      return 'ended';
    }
  }

  /** Commits the messages applied in memory since the last commit, if any. */
  private async commitApplied(): Promise<void> {
    const { cell } = this.runner;
    if (cell.uncommitted) await this.commit(cell.state, cell.cursor);
  }

  private async commit(state: unknown, cursor: number): Promise<void> {
    await this.runner.cell.commit(state, cursor);
  }

  /** Messages posted after `after`, validated; invalid ones are dead-lettered and skipped. */
  async drainAfter(after: number): Promise<{ messages: InboxMessage[]; through: number }> {
    const messages: InboxMessage[] = [];
    let through = after;
    // An empty drain (most tool boundaries) costs no round trip.
    if (this.inbox.knownEmptyAfter(after)) return { messages, through };
    for (;;) {
      const stored = await this.inbox.read(through);
      if (!stored) break;
      through = stored.seq;
      const info = inboxInfo(stored);
      try {
        const payload = this.runner.validate(info.type, decodeJson(stored.data));
        messages.push({
          type: info.type,
          payload,
          seq: stored.seq,
          ...(info.dedupeId ? { dedupeId: info.dedupeId } : {}),
          ...(info.sender ? { sender: info.sender } : {}),
        });
      } catch (err) {
        await this.giveUp(stored, toTroupeError(err), 1);
      }
    }
    return { messages, through };
  }

  /** Dead-letters a message (the caller moves the cursor past it). */
  private async giveUp(
    stored: StoredInboxMessage,
    error: TroupeError,
    attempts: number,
  ): Promise<void> {
    const { js, cluster } = this.dlq;
    await deadLetter(js, cluster, this.runner.address, stored, error, attempts);
    this.runner.log.error({ seq: stored.seq, code: error.code, attempts }, 'message dead-lettered');
  }
}
