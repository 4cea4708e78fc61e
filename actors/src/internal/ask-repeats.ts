import { type MsgHdrs } from '@nats-io/transport-node';
import { type Respondable } from './core-item';

/** How long an answered ask is remembered for a repeat of it (an asker's rounds take seconds). */
export const ANSWERED_ASK_RETENTION_MS = 10_000;
/** Most asks one activation remembers; the oldest are forgotten first. */
export const MAX_REMEMBERED_ASKS = 256;
/**
 * Most bytes of answers one activation remembers (a results page can be a megabyte); the oldest
 * are forgotten first, and a repeat of a forgotten ask runs again as it did before.
 */
export const MAX_REMEMBERED_ANSWER_BYTES = 4 * 1024 * 1024;

interface Remembered {
  /** Forgotten after this time (`Date.now()` clock). */
  expiresAt: number;
  answer?: { data: Uint8Array | undefined; headers: MsgHdrs | undefined };
  /** Repeats that arrived while the first was waiting or running: answered with it. */
  waiters: Respondable[];
}

/**
 * The asks an activation took, by the asker's id for the ask (`n` of the envelope, the same in
 * every round of one `ask()`): a repeat that reaches the same activation joins the first instead
 * of running the handler again, and one that arrives after the answer gets that answer.
 *
 * An asker asks again after an answer that the actor "moved" or "is passivating", or after
 * finding nobody at the actor's subject; another activation on its way out can answer that way
 * before the live one answers the same request, so each round ran the handler again in the live
 * activation (chaos seed 8704: a sandbox started one command eight times).
 */
export class AskRepeats {
  private readonly byId = new Map<string, Remembered>();
  private answerBytes = 0;

  /**
   * The responder to queue `msg` with when it is the first ask with `id` here; `undefined` when
   * it repeats one (it is answered with that one, now or when that one is).
   */
  admit(id: string, deadline: number | undefined, msg: Respondable): Respondable | undefined {
    const now = Date.now();
    const known = this.byId.get(id);
    if (known && known.expiresAt > now) {
      if (known.answer) {
        msg.respond(known.answer.data, {
          ...(known.answer.headers ? { headers: known.answer.headers } : {}),
        });
      } else {
        known.waiters.push(msg);
      }
      return undefined;
    }
    this.forgetOld(now);
    const entry: Remembered = {
      expiresAt: Math.max(deadline ?? 0, now) + ANSWERED_ASK_RETENTION_MS,
      waiters: [],
    };
    this.byId.set(id, entry);
    return {
      ...(msg.reply !== undefined ? { reply: msg.reply } : {}),
      respond: (data, opts) => {
        if (!entry.answer && this.byId.get(id) === entry) {
          entry.answer = { data, headers: opts?.headers };
          this.answerBytes += data?.length ?? 0;
          entry.expiresAt = Math.min(entry.expiresAt, Date.now() + ANSWERED_ASK_RETENTION_MS);
        }
        for (const w of entry.waiters.splice(0)) w.respond(data, opts);
        return msg.respond(data, opts);
      },
    };
  }

  /** How many asks are remembered. */
  get size(): number {
    return this.byId.size;
  }

  /** Drops expired asks, and the oldest beyond the limits of count and answer bytes. */
  private forgetOld(now: number): void {
    for (const [id, e] of this.byId) {
      if (
        this.byId.size < MAX_REMEMBERED_ASKS &&
        this.answerBytes <= MAX_REMEMBERED_ANSWER_BYTES &&
        e.expiresAt > now
      ) {
        break;
      }
      this.byId.delete(id);
      this.answerBytes -= e.answer?.data?.length ?? 0;
    }
  }
}
