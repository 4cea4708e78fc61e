import {
  type ActorAddress,
  ErrorReason,
  hasReason,
  invalidArgument,
  parseAddress,
  toTroupeError,
  TroupeError,
} from '@troupe/proto';
import { type MessageInfo } from '../actor-context';
import { type CoreItem, replyAllMoved, type Respondable, replyError } from './core-item';
import { encodeJson } from './json-codec';
import { Turn, type TurnRunner } from './turn';

/** Most asks/tells handled under one group commit. */
export const MAX_CORE_BATCH = 128;

/**
 * Handles a batch of asks/tells in order (a group commit). Each handler sees the state the
 * previous one left; replies are held until one commit has made every change durable. If that
 * commit is fenced, or the activation is fenced or its host's shutdown grace ends during the
 * batch, every ask is told the actor moved (the asker retries on the next activation); if the
 * commit fails otherwise, the in-memory state is rolled back and the asks get UNAVAILABLE
 * (retryable). Under load (100 callers of one ledger) this turns 100 KV writes into one.
 */
export async function handleCoreBatch(runner: TurnRunner, items: CoreItem[]): Promise<void> {
  const { cell, log } = runner;
  const replies: { msg: Respondable; ok?: Uint8Array; error?: TroupeError }[] = [];
  let dirty = false;
  for (const item of items) {
    if (runner.abandoned) break;
    const deadline = item.deadline;
    if (deadline !== undefined && deadline <= Date.now()) continue; // the asker has given up
    let payload: unknown;
    let sender: ActorAddress | undefined;
    try {
      payload = runner.validate(item.type, item.payload);
      if (item.sender !== undefined) sender = parseSender(item.sender);
    } catch (err) {
      if (item.via === 'ask') replies.push({ msg: item.msg, error: toTroupeError(err) });
      else log.warn({ err, type: item.type }, 'invalid message dropped (tell is at most once)');
      continue;
    }
    const info: MessageInfo = sender
      ? { type: item.type, via: item.via, sender }
      : { type: item.type, via: item.via };
    const turn = new Turn(runner, info, false, cell.cursor, deadline);
    try {
      const result = await runner.runHandler(turn, payload);
      if (result?.state !== undefined) {
        // Checked once for the whole batch, before the commit (a large state, such as a budget
        // ledger's, costs more to check than its handler costs to run).
        cell.state = result.state;
        dirty = true;
      }
      if (turn.drainedThrough > cell.cursor) {
        cell.cursor = turn.drainedThrough;
        dirty = true;
      }
      if (item.via === 'ask') replies.push({ msg: item.msg, ok: encodeJson(result?.reply) });
    } catch (err) {
      if (hasReason(err, ErrorReason.FENCED)) {
        replyAllMoved(items, runner.key, log);
        throw err;
      }
      if (runner.abandoned) break; // the handler failed for its aborted signal: see below
      const error = toTroupeError(err);
      log.warn({ err, type: item.type, via: item.via }, 'handler failed');
      if (item.via === 'ask') replies.push({ msg: item.msg, error });
    }
  }
  if (runner.abandoned) {
    // A newer activation fenced this one mid-batch (the host declared dead, or the actor moved),
    // or the host's shutdown grace ended: as for a fenced commit, nothing of the batch is kept
    // and its asks are told the actor moved, so their askers retry on the next activation.
    // Answered with the handler's CANCELLED (its signal aborted), an asker took its own call as
    // failed: a task waiting on a command in a sandbox fenced when its host was declared dead
    // failed its attempt (chaos seed 9035).
    cell.rollback();
    replyAllMoved(items, runner.key, log);
    return;
  }
  if (dirty) {
    let checked: unknown;
    try {
      checked = cell.validated(cell.state);
    } catch (err) {
      // A handler produced a state its schema refuses: nothing of this batch past its last
      // commit (a handler's checkpoint) is kept.
      cell.rollback();
      log.error({ err }, 'handler produced an invalid state; batch rolled back');
      for (const r of replies) replyError(r.msg, toTroupeError(err), log);
      return;
    }
    try {
      await cell.commit(checked, cell.cursor);
    } catch (err) {
      if (hasReason(err, ErrorReason.FENCED)) {
        replyAllMoved(items, runner.key, log);
        throw err;
      }
      // Back to the last commit: a checkpoint a handler of this batch made is in the store, and a
      // state from before it would say its work never happened (chaos seed 8105: a sandbox that
      // had recorded its command's start before running it answered that it had none).
      cell.rollback();
      // The asks' turns ran but nothing of them is kept: `details.commitFailed` tells an asker
      // that asking again runs them again (`isCommitFailed`). A store outage keeps its reason:
      // an asker's own turn failing on it is retried without counting towards a dead letter.
      const unavailable = new TroupeError('UNAVAILABLE', `${runner.key}: state commit failed`, {
        cause: err,
        details: { commitFailed: true },
        ...(hasReason(err, ErrorReason.STORE_UNAVAILABLE)
          ? { reason: ErrorReason.STORE_UNAVAILABLE }
          : {}),
      });
      for (const r of replies) replyError(r.msg, r.error ?? unavailable, log);
      throw err;
    }
  }
  for (const r of replies) {
    if (r.error) replyError(r.msg, r.error, log);
    else r.msg.respond(r.ok);
  }
}

/**
 * The envelope's sender (`s`), parsed; a malformed one is refused naming the envelope field, not
 * only the rule of an address.
 */
function parseSender(text: string): ActorAddress {
  try {
    return parseAddress(text);
  } catch (err) {
    throw invalidArgument(
      'envelope.s (sender)',
      `must be an actor address kind/id: ${(err as Error).message}`,
    );
  }
}
