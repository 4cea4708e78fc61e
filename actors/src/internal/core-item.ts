import { encodeErrorHeaders, type Logger, TroupeError } from '@troupe/proto';
import {
  headers as natsHeaders,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
} from '@nats-io/transport-node';
import { decodeJson } from './json-codec';
import { TELL_BATCH_KEY } from './tell-batcher';
import { ANSWER_HEADER, type CoreEnvelope, type ForwardedAsk, parseCoreEnvelope } from './protocol';

/** Where an ask's reply goes: a NATS message, or an ask handed over with the activation. */
export interface Respondable {
  readonly reply?: string;
  respond(data?: Uint8Array, opts?: { headers?: MsgHdrs }): boolean;
}

/** An ask or tell waiting in an activation's mailbox. */
export interface CoreItem {
  msg: Respondable;
  type: string;
  via: 'ask' | 'tell';
  payload: unknown;
  /** Absolute deadline (ms since epoch) of an ask. */
  deadline?: number;
  /** Sending actor, `kind/id`, not yet validated. */
  sender?: string;
}

/** The ask or tell an envelope carries, answered (if an ask) through `msg`. */
export function coreItem(msg: Respondable, via: 'ask' | 'tell', envelope: CoreEnvelope): CoreItem {
  const item: CoreItem = { msg, type: envelope.t, via, payload: envelope.m };
  if (envelope.d !== undefined) item.deadline = envelope.d;
  if (envelope.s !== undefined) item.sender = envelope.s;
  return item;
}

/**
 * The envelope of a message on an actor's subject; the envelopes of a batch of tells
 * (`{"b": [envelope, …]}`, see `TellBatcher`; an element that is no envelope is `undefined`); or
 * INVALID_ARGUMENT when it is neither.
 */
export function readEnvelope(msg: Msg): CoreEnvelope | (CoreEnvelope | undefined)[] | TroupeError {
  let value: unknown;
  try {
    value = decodeJson(msg.data);
  } catch {
    value = undefined;
  }
  const batch = (value as Record<string, unknown> | null | undefined)?.[TELL_BATCH_KEY];
  if (Array.isArray(batch) && !msg.reply) return batch.map(parseCoreEnvelope);
  return (
    parseCoreEnvelope(value) ??
    new TroupeError('INVALID_ARGUMENT', 'payload: must be a Troupe message envelope {t, m}')
  );
}

/**
 * Where the answer to an ask handed over with an activation request goes: the asker's reply
 * subject, marked with {@link ANSWER_HEADER} (so the asker tells it from the placer's own reply).
 */
export function forwardedAskReply(nc: NatsConnection, ask: ForwardedAsk): Respondable {
  return {
    reply: ask.r,
    respond: (data, opts) => {
      const h = opts?.headers ?? natsHeaders();
      h.set(ANSWER_HEADER, '1');
      nc.publish(ask.r, data ?? new Uint8Array(), { headers: h });
      return true;
    },
  };
}

/**
 * The error an ask gets when it reached an activation that is going away; the asker treats it
 * like "no responders": it has the actor activated again and retries (details.moved).
 */
export function movedError(key: string, why: string): TroupeError {
  return new TroupeError('UNAVAILABLE', `${key} ${why}`, { details: { moved: true } });
}

/** Answers an ask with `error` (nothing for a tell); a reply that cannot be sent is logged. */
export function replyError(msg: Respondable, error: TroupeError, log: Logger): void {
  if (!msg.reply) return;
  try {
    msg.respond(new Uint8Array(), { headers: encodeErrorHeaders(error) });
  } catch (err) {
    log.debug({ err }, 'could not send error reply');
  }
}

/**
 * Tells every ask of `items` that the actor moved or is passivating (`why`): the askers activate
 * it again and retry.
 */
export function replyAllMoved(
  items: readonly CoreItem[],
  key: string,
  log: Logger,
  why = 'moved',
): void {
  for (const item of items) {
    if (item.via === 'ask') replyError(item.msg, movedError(key, why), log);
  }
}
