import { delay, Header, parseAddress } from '@troupe/proto';
import { type MsgHdrs } from '@nats-io/transport-node';
import { type MessageInfo } from '../actor-context';

/**
 * How long an inbox read that found nothing is trusted by {@link InboxReader.knownEmptyAfter}
 * when no mail hint has named a newer message since. Hints are core NATS (at most once): a post
 * whose hints were all lost is still found by the next drain after this long, or by the read the
 * mailbox makes after every posted message's turn.
 */
export const EMPTY_INBOX_TRUST_MS = 500;

/**
 * Reads after a hint whose message a (lagging) replica did not show yet: 10, 20, 40, 80 ms; then
 * one read from the stream's leader decides (see {@link InboxReader.next}).
 */
export const MAX_LAGGING_READS = 4;

/** Most reads ahead in flight (see {@link InboxReader.read}). */
export const MAX_READS_AHEAD = 32;
/** Most hinted sequences remembered for reading ahead, and most pushed messages kept. */
const MAX_HINTED_KEPT = 1_024;
/** Most payload bytes of pushed messages kept by one activation (more are read when due). */
export const MAX_PUSHED_BYTES = 4 * 2 ** 20;

/** A message of an actor's inbox: what a turn needs of it. */
export interface StoredInboxMessage {
  /** Its sequence in the inbox stream. */
  readonly seq: number;
  readonly data: Uint8Array;
  /** Its stream headers (message type, sender, dedupe id). */
  readonly header?: MsgHdrs;
}

/**
 * A message the placer's inbox watcher delivered to this process, handed to the activation with
 * the watcher's delivery epoch: two pushes of one epoch are two deliveries of one unbroken run of
 * the watcher's consumer (see `PlacementService`).
 */
export interface PushedMessage {
  readonly msg: StoredInboxMessage;
  readonly epoch: number;
}

/**
 * The stream read an {@link InboxReader} is built on: the first message of the actor's inbox
 * after sequence `after`, or null when there is none (a direct get, `next_by_subj`).
 */
export type InboxRead = (after: number) => Promise<StoredInboxMessage | null>;

/**
 * Reads one activation's durable inbox and decides when it is worth reading: it counts mail hints
 * (so a hint that lands while a read is in flight is not lost), tracks the highest inbox sequence
 * a hint has named, trusts a read that found nothing for {@link EMPTY_INBOX_TRUST_MS}, re-reads a
 * lagging replica that does not show a hinted message yet, and hands out a read made while the
 * activation was starting.
 */
export class InboxReader {
  /** True while the inbox may hold a message after the cursor (read it before anything else). */
  private wantedFlag = true;
  /** Counts mail hints, so a hint that lands while the inbox is read is not lost. */
  private generation = 0;
  /** Highest inbox sequence a mail hint has named (0: none yet). */
  private hintedSeq = 0;
  /** Reads in a row that did not show a hinted message (a lagging replica). */
  private laggingReads = 0;
  /** False until hints reach the activation: before that, an empty read vouches for nothing. */
  private hintsArrive = false;
  /**
   * The last read, begun while hints arrive, that found nothing after `after`: when it started and
   * the highest hinted sequence then. Lets an empty drain skip the read.
   */
  private emptyRead?: { after: number; atMs: number; hintedSeq: number };
  /** A read made while the activation started, used by the first {@link next}. */
  private prefetched?: {
    after: number;
    generation: number;
    read: Promise<StoredInboxMessage | null>;
  };
  /** Hinted sequences not applied yet, ascending (for reading ahead). */
  private pendingHints: number[] = [];
  /** Reads ahead: the first message after each key, read before it was asked for. */
  private readonly ahead = new Map<number, Promise<StoredInboxMessage | null>>();
  /** The last message pushed to this activation, and the watcher's epoch then. */
  private lastPush?: { seq: number; epoch: number };
  /**
   * Pushed messages, each under the sequence of the push before it: the first message after that
   * sequence (proven by {@link pushed}), so a read after it costs no round trip. Keys ascend.
   */
  private readonly pushedAfter = new Map<number, StoredInboxMessage>();
  private pushedBytes = 0;

  /**
   * @param readAfter the stream read
   * @param applied where the activation is: `cursor`, the sequence of the last message applied
   * @param readFromLeader the same read answered by the stream's leader, never a lagging replica
   */
  constructor(
    private readonly readAfter: InboxRead,
    private readonly applied: { readonly cursor: number },
    private readonly readFromLeader?: InboxRead,
  ) {}

  /** True while the inbox should be read before anything else is done. */
  get wanted(): boolean {
    return this.wantedFlag;
  }

  /** Hints reach the activation from now on: a read begun after this may vouch for the inbox. */
  hintsSubscribed(): void {
    this.hintsArrive = true;
  }

  /**
   * A "you have mail" hint, naming the message's inbox sequence if it did (none: read anyway,
   * trusting no earlier empty read — a reconnect, where hints may have been lost). Returns false
   * for a stale hint (its message is already applied), true when the inbox is to be read.
   */
  hinted(seq: number | undefined): boolean {
    if (seq === undefined) {
      this.emptyRead = undefined;
    } else {
      if (seq <= this.applied.cursor) {
        if (seq > this.hintedSeq) this.hintedSeq = seq;
        return false;
      }
      if (seq > this.hintedSeq) {
        this.hintedSeq = seq;
        if (this.pendingHints.length < MAX_HINTED_KEPT) this.pendingHints.push(seq);
      }
    }
    this.wantedFlag = true;
    this.generation++;
    return true;
  }

  /**
   * A message the placer's inbox watcher delivered (call before {@link hinted} for it). It is
   * kept as the first message after the previous push when both came in one epoch: the watcher's
   * consumer delivers every inbox message, first deliveries in stream order, and within an epoch
   * every delivery reached this process in order with none missed or repeated. Any message on
   * this inbox stored between the two pushes was delivered between them, while this activation
   * was live (it was at both, and an activation that stops never takes mail again), so it would
   * have been pushed too. The first push of an activation, or the first of an epoch, proves
   * nothing: what lies before it is read from the stream.
   */
  pushed(push: PushedMessage): void {
    const { msg, epoch } = push;
    const last = this.lastPush;
    this.lastPush = { seq: msg.seq, epoch };
    if (last === undefined || last.epoch !== epoch || last.seq >= msg.seq) return;
    if (msg.seq <= this.applied.cursor || this.pushedAfter.size >= MAX_HINTED_KEPT) return;
    if (this.pushedBytes + msg.data.length > MAX_PUSHED_BYTES) return;
    // A copy: the delivered payload is a view of the connection's read buffer, which a kept
    // view would hold whole.
    this.pushedAfter.set(last.seq, { ...msg, data: msg.data.slice() });
    this.pushedBytes += msg.data.length;
  }

  /** The mailbox failed (infrastructure trouble): the inbox is read again, afresh, on retry. */
  retry(): void {
    this.wantedFlag = true;
    this.laggingReads = 0;
  }

  /**
   * Keeps a read of the first message after `after` made while the activation started. A message
   * found then is the right one whenever it was read; "none" is not trusted, since a post stored
   * after that read but before hints arrived sent its hint to nobody: the inbox is read again now
   * (call after {@link hintsSubscribed}).
   */
  prefetch(after: number, early: StoredInboxMessage | null): void {
    const read = early ? Promise.resolve(early) : this.read(after);
    read.catch(() => undefined); // awaited by next() (or dropped if the start fails)
    this.prefetched = { after, generation: this.generation, read };
  }

  /**
   * One look at the inbox for the message after the cursor. Null when there is none this time:
   * then either the inbox is concluded empty ({@link wanted} turns false until the next hint), or
   * it is to be read again (a hint arrived during the read; or a hint named a message the read did
   * not show — with replicated streams a direct get may be answered by a replica that has not
   * caught up yet — after a pause of 10 ms doubling, {@link MAX_LAGGING_READS} times). When the
   * replicas still do not show it, the stream's leader is asked: a replica catching up after its
   * server restarted lags for seconds, and concluding "empty" then stranded the message (chaos
   * seed 8007: a woken task actor saw no `run` and slept for two minutes).
   */
  async next(): Promise<StoredInboxMessage | null> {
    const cursor = this.applied.cursor;
    const prefetched = this.prefetched;
    this.prefetched = undefined;
    const usePrefetched = prefetched !== undefined && prefetched.after === cursor;
    const seen = usePrefetched ? prefetched.generation : this.generation;
    const found = await (usePrefetched ? prefetched.read : this.read(cursor));
    if (found) {
      this.laggingReads = 0;
      return found;
    }
    // A hint that arrived while we looked (or since the prefetch) means: look again.
    if (this.generation !== seen) return null;
    if (this.hintedSeq > this.applied.cursor) {
      if (this.laggingReads < MAX_LAGGING_READS) {
        await delay(10 * 2 ** this.laggingReads++, undefined, { unref: true });
        return null;
      }
      if (this.readFromLeader) {
        this.laggingReads = 0;
        const led = await this.readFromLeader(cursor);
        if (led) return led;
        // Not even the leader has it: the hinted message is gone (the inbox trimmed).
        if (this.generation !== seen) return null;
      }
    }
    this.laggingReads = 0;
    this.wantedFlag = false;
    return null;
  }

  /**
   * The message after `last`, read now to extend a batch of posted messages; null when there is
   * none. A read that finds nothing is kept for the next {@link next} at that cursor, which then
   * costs no round trip (a batch costs no more reads than its messages one at a time).
   */
  async readMore(last: number): Promise<StoredInboxMessage | null> {
    const generation = this.generation;
    const found = await this.read(last);
    if (!found) this.prefetched = { after: last, generation, read: Promise.resolve(null) };
    return found;
  }

  /**
   * For an activation that passivates once idle and has applied the messages through `last`:
   * true, and the inbox is not read again until the next hint, when no hint has named a message
   * after `last`. A message that came without a hint is found by the read the activation makes
   * after releasing its directory entry (`rewakeIfPending`), which starts a new activation for
   * it; reading here too would cost every passivating actor a round trip to find, almost always,
   * nothing.
   */
  leaveForPassivation(last: number): boolean {
    if (this.hintedSeq > last) return false;
    this.prefetched = undefined;
    this.wantedFlag = false;
    return true;
  }

  /**
   * The first message after `after`; a read that finds nothing is remembered.
   *
   * Reads ahead: a burst of posts to one actor would cost one direct get after another, each
   * waiting for the one before. Every hinted sequence `h` that another hinted sequence follows
   * is on this inbox's subject and has a successor there, so the first message after `h` is read
   * at once, in parallel (up to {@link MAX_READS_AHEAD} in flight), and a later read after `h`
   * takes it. A message found that way is the one a read now would find (the stream only grows,
   * and even a lagging replica that holds a message after `h` holds the first one); a read ahead
   * that found nothing or failed is made again.
   */
  async read(after: number): Promise<StoredInboxMessage | null> {
    // Only a read begun while hints arrive may vouch for "nothing newer": before that, a post's
    // hint went to nobody.
    const vouch = this.hintsArrive
      ? { after, atMs: Date.now(), hintedSeq: this.hintedSeq }
      : undefined;
    const pushed = this.takePushed(after);
    if (pushed) return pushed;
    const early = this.takeAhead(after);
    let found = early ? await early.catch(() => null) : null;
    if (!found) found = await this.readAfter(after);
    if (!found && vouch) this.emptyRead = vouch;
    return found;
  }

  /** The pushed message proven first after `after`, if there is one; drops those behind it. */
  private takePushed(after: number): StoredInboxMessage | undefined {
    if (this.pushedAfter.size === 0) return undefined;
    for (const [key, behind] of this.pushedAfter) {
      if (key >= after) break;
      this.pushedAfter.delete(key);
      this.pushedBytes -= behind.data.length;
    }
    const msg = this.pushedAfter.get(after);
    if (msg) {
      this.pushedAfter.delete(after);
      this.pushedBytes -= msg.data.length;
    }
    return msg;
  }

  /** The read ahead after `after`, if one was made; starts those worth making now. */
  private takeAhead(after: number): Promise<StoredInboxMessage | null> | undefined {
    for (const key of this.ahead.keys()) if (key < after) this.ahead.delete(key);
    const hints = this.pendingHints;
    let first = 0;
    while (first < hints.length && hints[first]! < after) first++;
    if (first > 0) this.pendingHints = hints.slice(first);
    const early = this.ahead.get(after);
    this.ahead.delete(after);
    // Every pending hint but the last has a successor on the subject: read it now.
    const pending = this.pendingHints;
    for (let i = 0; i + 1 < pending.length && this.ahead.size < MAX_READS_AHEAD; i++) {
      const h = pending[i]!;
      if (h === after || this.ahead.has(h) || this.pushedAfter.has(h)) continue;
      const read = this.readAfter(h);
      read.catch(() => undefined); // taken (and its failure ignored) by a later read
      this.ahead.set(h, read);
    }
    return early;
  }

  /**
   * True when the inbox is known to hold nothing after `after`: a read found nothing after it (or
   * before it) less than {@link EMPTY_INBOX_TRUST_MS} ago, and no hint has named a message after
   * `after` that such a read could not have seen.
   */
  knownEmptyAfter(after: number): boolean {
    const e = this.emptyRead;
    return (
      e !== undefined &&
      e.after <= after &&
      (this.hintedSeq <= after || this.hintedSeq === e.hintedSeq) &&
      Date.now() - e.atMs < EMPTY_INBOX_TRUST_MS
    );
  }
}

/** The sequence a mail hint's payload names, if it names one. */
export function hintSeq(m: unknown): number | undefined {
  const seq = typeof m === 'object' && m !== null ? (m as { seq?: unknown }).seq : undefined;
  return typeof seq === 'number' && Number.isSafeInteger(seq) && seq > 0 ? seq : undefined;
}

/** What a turn is told of a posted message, from its stream headers. */
export function inboxInfo(stored: StoredInboxMessage): MessageInfo & { seq: number } {
  const h = stored.header;
  const sender = h?.get(Header.SENDER);
  const dedupeId = h?.get(Header.MSG_ID);
  return {
    type: h?.get(Header.MSG_TYPE) ?? '',
    via: 'post',
    seq: stored.seq,
    ...(dedupeId ? { dedupeId } : {}),
    ...(sender ? { sender: parseAddress(sender) } : {}),
  };
}
