import { delay, ErrorReason, hasReason, toTroupeError, type TroupeError } from '@troupe/proto';
import { type JetStreamClient, type StoredMsg } from '@nats-io/jetstream';
import { type InboxMessage } from '../actor-context';
import { deadLetter } from './dead-letter';
import { inboxInfo, type InboxReader } from './inbox-reader';
import { decodeJson } from './json-codec';
import { Turn, type TurnRunner } from './turn';

/**
 * An activation's posted messages: each is handled in its own turn and committed with the inbox
 * cursor; a message whose handler keeps failing is retried with backoff and, after `maxAttempts`,
 * dead-lettered (an invalid one at once, after the definition's `onInvalid`), and the cursor moves
 * on. Failures of the runtime's own store are not the message's fault: they count no attempt.
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

  /** Handles the next posted message (the one after the cursor). */
  async handle(stored: StoredMsg): Promise<void> {
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
      const error = toTroupeError(err);
      const state = await this.runner.runOnInvalid(turn, { type: info.type, payload: raw, error });
      await this.giveUp(stored, error, 1);
      await cell.commit(state, stored.seq);
      return;
    }
    try {
      const result = await this.runner.runHandler(turn, payload);
      const next = result?.state !== undefined ? cell.validated(result.state) : cell.state;
      await cell.commit(next, Math.max(stored.seq, turn.drainedThrough));
      this.failures?.delete(stored.seq);
    } catch (err) {
      // The runtime's own store (the commit, or a checkpoint inside the turn) was unreachable:
      // infrastructure trouble, not the message's fault. The pump retries the message after a
      // pause without counting an attempt, so a JetStream leader election dead-letters nothing.
      if (hasReason(err, ErrorReason.FENCED) || hasReason(err, ErrorReason.STORE_UNAVAILABLE))
        throw err;
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
        await cell.commit(cell.state, stored.seq);
      } else {
        // Back off before the retry; the message stays first in line (turn order is kept).
        await delay(Math.min(2_000, 50 * 4 ** (attempts - 1)), undefined, { unref: true });
      }
    }
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
  private async giveUp(stored: StoredMsg, error: TroupeError, attempts: number): Promise<void> {
    const { js, cluster } = this.dlq;
    await deadLetter(js, cluster, this.runner.address, stored, error, attempts);
    this.runner.log.error({ seq: stored.seq, code: error.code, attempts }, 'message dead-lettered');
  }
}
