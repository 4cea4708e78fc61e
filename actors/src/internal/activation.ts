import {
  type ActorAddress,
  actorSubject,
  deadLetterSubject,
  encodeErrorHeaders,
  formatAddress,
  fromZodError,
  Header,
  inboxSubject,
  inboxStreamName,
  parseAddress,
  toTroupeError,
  TroupeError,
} from '@troupe/proto';
import {
  headers as natsHeaders,
  type Msg,
  type MsgHdrs,
  type Subscription,
} from '@nats-io/transport-node';
import { type JetStreamManager, type StoredMsg } from '@nats-io/jetstream';
import {
  type AnyActorDefinition,
  type HandlerResult,
  type InvalidMessage,
} from '../actor-definition';
import { type ActorContext, type InboxMessage, type MessageInfo } from '../actor-context';
import { type Directory } from '../directory';
import { type Logger } from '../logger';
import { type RefFactory } from '../ref-factory';
import {
  isFenced,
  isStoreUnavailable,
  type StateRecord,
  type StateStore,
  type StoredState,
} from '../state-store';
import { decodeJson, encodeJson } from './json-codec';
import {
  ANSWER_HEADER,
  type ActivationPlacement,
  type CoreEnvelope,
  type ForwardedAsk,
  MAIL_HINT_TYPE,
  parseCoreEnvelope,
} from './protocol';
import { type Transport } from './transport';

/**
 * The error an ask gets when it reached an activation that is going away; the asker treats it
 * like "no responders": it has the actor activated again and retries (details.moved).
 */
function movedError(key: string, why: string): TroupeError {
  return new TroupeError('UNAVAILABLE', `${key} ${why}`, { details: { moved: true } });
}

/** Most asks/tells handled under one group commit. */
const MAX_CORE_BATCH = 128;

/**
 * How long an inbox read that found nothing is trusted by {@link Activation.drainAfter} when no
 * mail hint has named a newer message since. Hints are core NATS (at most once): a post whose
 * hints were all lost is still found by the next drain after this long, or by the read the
 * mailbox makes after every posted message's turn.
 */
export const EMPTY_INBOX_TRUST_MS = 500;

/** Minimum idle time of a fresh activation before its first message. */
const FIRST_MESSAGE_GRACE_MS = 2_000;
/** Reads after a hint whose message a (lagging) replica did not show yet: 10, 20, ... 640 ms. */
const MAX_LAGGING_READS = 7;
/** Longest pause between pump retries while infrastructure trouble lasts. */
const PUMP_RETRY_MAX_MS = 5_000;

/** What an activation needs from its host. */
export interface ActivationHost {
  readonly transport: Transport;
  readonly jsm: JetStreamManager;
  readonly directory: Directory;
  readonly states: StateStore;
  readonly hostId: string;
  readonly incarnation: string;
  readonly log: Logger;
  /** Ref factory whose sends carry `sender` as the sending actor. */
  refsFor(sender: ActorAddress): RefFactory;
  /** Called once when the activation has ended (passivated, fenced, or failed to start). */
  onEnded(activation: Activation): void;
}

/** Where an ask's reply goes: a NATS message, or an ask handed over with the activation. */
interface Respondable {
  readonly reply?: string;
  respond(data?: Uint8Array, opts?: { headers?: MsgHdrs }): boolean;
}

interface CoreItem {
  msg: Respondable;
  type: string;
  via: 'ask' | 'tell';
  payload: unknown;
  deadline?: number;
  sender?: string;
}

/** Why an activation ended. */
export type EndReason = 'idle' | 'shutdown' | 'fenced' | 'deactivated' | 'failed';

/**
 * One live activation of an actor: a single-threaded mailbox over core NATS (ask/tell) and the
 * actor's durable inbox (post), with state and inbox cursor committed by compare-and-set.
 */
export class Activation {
  readonly address: ActorAddress;
  private readonly key: string;
  private stateValue: unknown;
  /** The committed record, encoded, after a checkpoint that kept no copy (decoded on demand). */
  private stateRecordJson: Uint8Array | undefined;
  private revision = 0;
  private cursor = 0;
  private pendingTurn: StateRecord['turn'];
  private readonly queue: CoreItem[] = [];
  private inboxWanted = true;
  /** Counts "you have mail" hints, so a hint that lands while the inbox is read is not lost. */
  private mailGeneration = 0;
  /** Highest inbox sequence a mail hint has named (0: none yet). */
  private hintedSeq = 0;
  /** Consecutive pump failures (infrastructure trouble), for the retry pause. */
  private pumpFailures = 0;
  /**
   * The last inbox read, made while subscribed to hints, that found nothing after `after`: when
   * it started and the highest hinted sequence then. Lets an empty drain skip the read.
   */
  private inboxEmpty?: { after: number; atMs: number; hintedSeq: number };
  /** First inbox message after cursor 0, read while the activation started (see start). */
  private prefetchedInbox?: { after: number; generation: number; read: Promise<StoredMsg | null> };
  /** False until start() has loaded the state: messages that arrive earlier wait in the queue. */
  private ready = false;
  private sub?: Subscription;
  private pumping = false;
  private inTurn = false;
  private ended = false;
  private stopping = false;
  private idleTimer?: NodeJS.Timeout;
  private readonly abort = new AbortController();
  private readonly failures = new Map<number, number>();
  /** Listeners of running turns, told of mail hints (see {@link ActorContext.onMail}). */
  private readonly mailListeners = new Set<() => void>();
  private handledAny = false;
  private readonly log: Logger;
  private pumpDone: Promise<void> = Promise.resolve();

  constructor(
    private readonly def: AnyActorDefinition,
    id: string,
    readonly epoch: number,
    private readonly host: ActivationHost,
    private readonly placement: ActivationPlacement = {},
  ) {
    this.address = { kind: def.kind, id };
    this.key = formatAddress(this.address);
    this.log = host.log.child({ actor: this.key, epoch });
  }

  /** True while a turn runs or messages wait. */
  get busy(): boolean {
    return this.inTurn || this.queue.length > 0;
  }

  /**
   * Claims the state for this epoch, subscribes, runs `onActivate` and marks the directory IDLE.
   * Throws when fenced or when `onActivate` fails (the caller reports it to the placer).
   */
  async start(): Promise<void> {
    if (this.placement.claimRevision !== undefined) {
      await this.startClaiming(this.placement.claimRevision);
      return;
    }
    const claimed = await this.host.states.claim(this.address, this.epoch);
    this.load(claimed);

    this.subscribe();
    await this.runOnActivate();
    if (!(await this.tryMarkIdleAtHint())) await this.markDirectory('ACTIVATING', 'IDLE');
    this.ready = true;
    this.schedule();
  }

  /**
   * One-step activation (the placer read the entry SLEEPING at `claimRevision` and wrote
   * nothing). In parallel: claims the directory entry SLEEPING → IDLE at this epoch by CAS, reads
   * the state record, and (unless an ask came with the request: such activations rarely have
   * mail) reads the first inbox message after cursor 0, used when the record says cursor 0 —
   * always for an actor that never committed. A message found then is the right one whenever it
   * was read; "none" is not trusted, since a post stored after that read but before we subscribed
   * sent its hint to nobody: the inbox is read again after subscribing (same connection, so the
   * server registers the subscription first). Only the CAS winner subscribes —
   * a loser that had subscribed would receive the same core requests as the winner and could
   * answer one "moved" before the winner answers it, making the asker run it twice — and claims
   * the state record (epoch bump). Messages that arrive before the state is loaded wait.
   */
  private async startClaiming(claimRevision: number): Promise<void> {
    const { jobId } = this.placement;
    const [dir, state, inbox] = await Promise.allSettled([
      this.host.directory.compareAndSet(this.address, claimRevision, {
        state: 'IDLE',
        hostId: this.host.hostId,
        incarnation: this.host.incarnation,
        epoch: this.epoch,
        ...(jobId ? { jobId } : {}),
        updatedAtMs: Date.now(),
      }),
      this.host.states.read(this.address),
      this.placement.withAsk ? Promise.resolve(null) : this.nextInbox(0),
    ]);
    if (dir.status === 'rejected') throw dir.reason;
    if (dir.value === undefined) {
      throw new TroupeError(
        'UNAVAILABLE',
        `${this.key}: the directory entry changed before this host could claim it`,
        { details: { raced: true } },
      );
    }
    this.subscribe();
    const early = inbox.status === 'fulfilled' ? inbox.value : null;
    const read = early ? Promise.resolve(early) : this.nextInbox(0);
    read.catch(() => undefined); // awaited by the pump (or dropped if the start fails)
    this.prefetchedInbox = { after: 0, generation: this.mailGeneration, read };
    if (state.status === 'rejected') throw state.reason;
    const current: StoredState | undefined = state.value;
    this.load(await this.host.states.claim(this.address, this.epoch, { current }));
    await this.runOnActivate();
    this.ready = true;
    this.schedule();
  }

  private load(claimed: { record: StateRecord | undefined; revision: number }): void {
    this.revision = claimed.revision;
    this.cursor = claimed.record?.cursor ?? 0;
    this.pendingTurn = claimed.record?.turn;
    const loaded = claimed.record ? this.def.state.safeParse(claimed.record.data) : undefined;
    if (loaded && !loaded.success) {
      throw new TroupeError('INTERNAL', `stored state of ${this.key} does not match its schema`, {
        cause: fromZodError(loaded.error, { prefix: 'state' }),
      });
    }
    this.state = loaded ? loaded.data : this.def.initialState(this.address.id);
  }

  private subscribe(): void {
    this.sub = this.host.transport.nc.subscribe(
      actorSubject(this.host.transport.cluster, this.address),
      {
        callback: (err, msg) => {
          if (!err) this.onCoreMessage(msg);
        },
      },
    );
  }

  private async runOnActivate(): Promise<void> {
    if (!this.def.onActivate) return;
    const ctx = this.context({ type: '$activate', via: 'tell' }, false);
    const result = await this.def.onActivate(ctx, this.state);
    if (result?.state !== undefined)
      await this.commitState(this.validated(result.state), this.cursor);
  }

  /** Stops taking messages, finishes the current turn, commits and releases the directory entry. */
  async stop(reason: EndReason): Promise<void> {
    if (this.stopping) return this.pumpDone;
    this.stopping = true;
    this.clearIdle();
    // Drain, not unsubscribe: a request the server routed to us before it saw the UNSUB still
    // reaches the callback, which answers it with movedError (the asker retries) instead of it
    // vanishing into a timeout.
    const drained = this.sub?.drain().catch(() => undefined);
    // Asks that were queued but not started get an UNAVAILABLE; the caller retries and lands on
    // the next activation.
    for (const item of this.queue.splice(0)) {
      if (item.via === 'ask') {
        this.replyError(item.msg, movedError(this.key, 'is passivating'));
      }
    }
    await this.pumpDone;
    await drained;
    if (this.ended) return;
    if (this.def.onDeactivate) {
      try {
        await this.def.onDeactivate(
          this.context({ type: '$deactivate', via: 'tell' }, false),
          this.state,
        );
      } catch (err) {
        this.log.warn({ err }, 'onDeactivate failed');
      }
    }
    try {
      await this.markDirectory(undefined, 'SLEEPING', reason);
    } catch (err) {
      if (!isFenced(err)) this.log.warn({ err }, 'could not release directory entry');
    }
    this.end(reason);
    if (reason === 'idle' || reason === 'deactivated') await this.rewakeIfPending();
  }

  /** Fences this activation: a newer one owns the actor. Stops at once without writing. */
  fence(): void {
    if (this.ended) return;
    this.stopping = true;
    this.clearIdle();
    this.sub?.unsubscribe();
    this.abort.abort(new TroupeError('CANCELLED', `${this.key} was fenced by a newer activation`));
    for (const item of this.queue.splice(0)) {
      if (item.via === 'ask') this.replyError(item.msg, movedError(this.key, 'moved'));
    }
    this.end('fenced');
  }

  /** Aborts a running turn (shutdown grace expired). */
  abortTurn(reason: TroupeError): void {
    this.abort.abort(reason);
  }

  private end(reason: EndReason): void {
    if (this.ended) return;
    this.ended = true;
    this.log.debug({ reason }, 'activation ended');
    this.host.onEnded(this);
  }

  // ---- mailbox ------------------------------------------------------------------------------

  private onCoreMessage(msg: Msg): void {
    if (this.stopping) {
      if (msg.reply) this.replyError(msg, movedError(this.key, 'is passivating'));
      return;
    }
    const via = msg.reply ? 'ask' : 'tell';
    let envelope: CoreEnvelope | undefined;
    try {
      envelope = parseCoreEnvelope(decodeJson(msg.data));
    } catch {
      envelope = undefined;
    }
    if (!envelope) {
      const error = new TroupeError(
        'INVALID_ARGUMENT',
        'payload: must be a Troupe message envelope {t, m}',
      );
      if (via === 'ask') this.replyError(msg, error);
      else this.log.warn({ err: error }, 'malformed message dropped (tell is at most once)');
      return;
    }
    if (envelope.t === MAIL_HINT_TYPE) {
      this.mailHinted(hintSeq(envelope.m));
    } else {
      if (via === 'ask' && envelope.i === 1 && this.busy) {
        this.replyError(msg, new TroupeError('BUSY', `${this.key} is running a turn`));
        return;
      }
      const item: CoreItem = { msg, type: envelope.t, via, payload: envelope.m };
      if (envelope.d !== undefined) item.deadline = envelope.d;
      if (envelope.s !== undefined) item.sender = envelope.s;
      this.queue.push(item);
    }
    this.schedule();
  }

  /**
   * "You have mail" (over NATS, or from a post in this process): the inbox is read again, and a
   * drain in a running turn reads it. A hint that names a message already applied is stale.
   */
  mailHinted(seq: number | undefined): void {
    if (this.stopping || this.ended) return;
    if (seq === undefined) {
      this.inboxEmpty = undefined;
    } else {
      if (seq > this.hintedSeq) this.hintedSeq = seq;
      if (seq <= this.cursor) return;
    }
    this.inboxWanted = true;
    this.mailGeneration++;
    for (const listener of this.mailListeners) {
      try {
        listener();
      } catch (err) {
        this.log.warn({ err }, 'mail listener failed');
      }
    }
    this.schedule();
  }

  /** Calls `listener` at each mail hint until the returned function is called. */
  addMailListener(listener: () => void): () => void {
    const wrapped = () => listener();
    this.mailListeners.add(wrapped);
    return () => this.mailListeners.delete(wrapped);
  }

  private schedule(): void {
    this.clearIdle();
    if (this.pumping || this.ended || !this.ready) return;
    this.pumping = true;
    this.pumpDone = this.pump().finally(() => {
      this.pumping = false;
      if (!this.ended && !this.stopping) {
        if (this.queue.length > 0 || this.inboxWanted) this.schedule();
        else this.armIdle();
      }
    });
  }

  private async pump(): Promise<void> {
    let lagRetries = 0;
    try {
      // A stop lets the current turn finish, then no new one starts.
      while (!this.ended && !this.stopping && !this.abort.signal.aborted) {
        if (this.inboxWanted) {
          const generation = this.mailGeneration;
          const prefetched = this.prefetchedInbox;
          this.prefetchedInbox = undefined;
          const usePrefetched = prefetched !== undefined && prefetched.after === this.cursor;
          const next = await (usePrefetched ? prefetched.read : this.nextInbox(this.cursor));
          if (next) {
            lagRetries = 0;
            await this.handleInbox(next);
            this.pumpFailures = 0;
            continue;
          }
          this.pumpFailures = 0;
          // A hint that arrived while we looked (or since the prefetch) means: look again.
          const seen = usePrefetched ? prefetched.generation : generation;
          if (this.mailGeneration !== seen) continue;
          // A hint named a message the read did not find: with replicated streams a direct get
          // may be answered by a replica that has not caught up yet. Look again shortly.
          if (this.hintedSeq > this.cursor && lagRetries < MAX_LAGGING_READS) {
            await new Promise((r) => setTimeout(r, 10 * 2 ** lagRetries++).unref());
            continue;
          }
          lagRetries = 0;
          this.inboxWanted = false;
          continue;
        }
        if (this.queue.length === 0) return;
        // Group commit: every ask/tell waiting now is handled in order against the in-memory
        // state, then one compare-and-set commits them all before any reply leaves. Under load
        // (100 callers of one ledger) this turns 100 KV writes into one.
        await this.handleCoreBatch(this.queue.splice(0, MAX_CORE_BATCH));
      }
    } catch (err) {
      if (isFenced(err)) {
        this.log.warn({ err }, 'fenced by a newer activation');
        this.fence();
        return;
      }
      // Infrastructure trouble (NATS down, a stream without a leader): keep the actor; retry the
      // pump after a pause that grows while the trouble lasts.
      this.pumpFailures++;
      const pauseMs = Math.min(PUMP_RETRY_MAX_MS, 250 * 2 ** Math.min(this.pumpFailures - 1, 5));
      this.log.error({ err, failures: this.pumpFailures, pauseMs }, 'mailbox pump failed');
      this.inboxWanted = true;
      await new Promise((r) => setTimeout(r, pauseMs).unref());
    }
  }

  private armIdle(): void {
    this.clearIdle();
    // Until the first message, wait at least FIRST_MESSAGE_GRACE_MS: the ask that caused the
    // activation is retried only after the placer's reply, and must find us still here.
    const ms = this.handledAny
      ? this.def.idleTimeoutMs
      : Math.max(this.def.idleTimeoutMs, FIRST_MESSAGE_GRACE_MS);
    this.idleTimer = setTimeout(() => {
      if (!this.busy && !this.stopping) void this.stop('idle');
    }, ms);
    this.idleTimer.unref();
  }

  private clearIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  // ---- inbox --------------------------------------------------------------------------------

  private async nextInbox(after: number): Promise<StoredMsg | null> {
    // Only a read begun while subscribed may vouch for "nothing newer": before that, a post's
    // hint went to nobody.
    const vouch = this.sub ? { after, atMs: Date.now(), hintedSeq: this.hintedSeq } : undefined;
    const next = await this.host.jsm.direct.getMessage(
      inboxStreamName(this.host.transport.cluster),
      {
        next_by_subj: inboxSubject(this.host.transport.cluster, this.address),
        seq: after + 1,
      },
    );
    if (!next && vouch) this.inboxEmpty = vouch;
    return next;
  }

  /**
   * True when the inbox is known to hold nothing after `after`: a read found nothing after it (or
   * before it) less than {@link EMPTY_INBOX_TRUST_MS} ago, and no hint has named a message after
   * `after` that such a read could not have seen.
   */
  private inboxKnownEmptyAfter(after: number): boolean {
    const e = this.inboxEmpty;
    return (
      e !== undefined &&
      e.after <= after &&
      (this.hintedSeq <= after || this.hintedSeq === e.hintedSeq) &&
      Date.now() - e.atMs < EMPTY_INBOX_TRUST_MS
    );
  }

  private async handleInbox(stored: StoredMsg): Promise<void> {
    const info = inboxInfo(stored);
    const resumed = this.pendingTurn?.seq === stored.seq;
    const drainedFrom = resumed ? (this.pendingTurn?.drainedThrough ?? stored.seq) : stored.seq;
    this.pendingTurn = undefined;
    let raw: unknown;
    let payload: unknown;
    try {
      raw = decodeJson(stored.data);
      payload = this.validate(info.type, raw);
    } catch (err) {
      const error = toTroupeError(err);
      const state = await this.runOnInvalid(new Turn(this, info, resumed, drainedFrom), {
        type: info.type,
        payload: raw,
        error,
      });
      await this.deadLetter(stored, error, 1, state);
      return;
    }
    const turn = new Turn(this, info, resumed, drainedFrom);
    try {
      const result = await this.runHandler(turn, payload);
      const next = result?.state !== undefined ? this.validated(result.state) : this.state;
      await this.commitState(next, Math.max(stored.seq, turn.drainedThrough));
      this.failures.delete(stored.seq);
    } catch (err) {
      // The runtime's own store (the commit, or a checkpoint inside the turn) was unreachable:
      // infrastructure trouble, not the message's fault. The pump retries the message after a
      // pause without counting an attempt, so a JetStream leader election dead-letters nothing.
      if (isFenced(err) || isStoreUnavailable(err)) throw err;
      const attempts = (this.failures.get(stored.seq) ?? 0) + 1;
      this.failures.set(stored.seq, attempts);
      const error = toTroupeError(err);
      this.log.warn({ err, seq: stored.seq, attempts }, 'handler failed on a posted message');
      if (
        attempts >= this.def.maxAttempts ||
        (!error.retryable && error.code === 'INVALID_ARGUMENT')
      ) {
        this.failures.delete(stored.seq);
        await this.deadLetter(stored, error, attempts);
      } else {
        // Back off before the retry; the message stays first in line (turn order is kept).
        await new Promise((r) => setTimeout(r, Math.min(2_000, 50 * 4 ** (attempts - 1))).unref());
      }
    }
  }

  /**
   * The definition's `onInvalid` for a posted message that failed validation; returns the state
   * to commit with the cursor. Its own failures are logged (the message is dead-lettered anyway),
   * except a store outage or fencing, which the pump handles as for any turn.
   */
  private async runOnInvalid(turn: Turn, invalid: InvalidMessage): Promise<unknown> {
    const onInvalid = this.def.onInvalid;
    if (!onInvalid) return this.state;
    this.inTurn = true;
    try {
      const result = await onInvalid(this.contextFor(turn), invalid, this.state);
      return result?.state !== undefined ? this.validated(result.state) : this.state;
    } catch (err) {
      if (isFenced(err) || isStoreUnavailable(err)) throw err;
      this.log.warn({ err, type: invalid.type }, 'onInvalid failed');
      return this.state;
    } finally {
      this.inTurn = false;
      turn.close();
    }
  }

  private async deadLetter(
    stored: StoredMsg,
    error: TroupeError,
    attempts: number,
    state: unknown = this.state,
  ): Promise<void> {
    const h = natsHeaders();
    for (const [k, v] of stored.header ?? []) for (const value of v) h.append(k, value);
    encodeErrorHeaders(error, h);
    h.set(Header.ATTEMPT, String(attempts));
    h.set(Header.ORIGINAL_SEQ, String(stored.seq));
    h.set(Header.MSG_ID, `dlq-${this.host.transport.cluster}-${stored.seq}`);
    await this.host.transport.js.publish(
      deadLetterSubject(this.host.transport.cluster, this.address),
      stored.data,
      { headers: h, msgID: `dlq-${stored.seq}` },
    );
    this.log.error({ seq: stored.seq, code: error.code, attempts }, 'message dead-lettered');
    await this.commitState(state, stored.seq);
  }

  /** Messages posted after `after`, validated; invalid ones are dead-lettered and skipped. */
  async drainAfter(after: number): Promise<{ messages: InboxMessage[]; through: number }> {
    const messages: InboxMessage[] = [];
    let through = after;
    // An empty drain (most tool boundaries) costs no round trip.
    if (this.inboxKnownEmptyAfter(after)) return { messages, through };
    for (;;) {
      const stored = await this.nextInbox(through);
      if (!stored) break;
      through = stored.seq;
      const info = inboxInfo(stored);
      try {
        const payload = this.validate(info.type, decodeJson(stored.data));
        messages.push({
          type: info.type,
          payload,
          seq: stored.seq,
          ...(info.dedupeId ? { dedupeId: info.dedupeId } : {}),
          ...(info.sender ? { sender: info.sender } : {}),
        });
      } catch (err) {
        await this.deadLetterOnly(stored, toTroupeError(err));
      }
    }
    return { messages, through };
  }

  private async deadLetterOnly(stored: StoredMsg, error: TroupeError): Promise<void> {
    const h = natsHeaders();
    encodeErrorHeaders(error, h);
    h.set(Header.ORIGINAL_SEQ, String(stored.seq));
    if (stored.header?.get(Header.MSG_TYPE))
      h.set(Header.MSG_TYPE, stored.header.get(Header.MSG_TYPE));
    await this.host.transport.js.publish(
      deadLetterSubject(this.host.transport.cluster, this.address),
      stored.data,
      { headers: h, msgID: `dlq-${stored.seq}` },
    );
  }

  // ---- core messages ------------------------------------------------------------------------

  /**
   * Handles a batch of asks/tells in order. Each handler sees the state the previous one left;
   * replies are held until one commit has made every change durable. If that commit is fenced,
   * every ask is told the actor moved (the asker retries on the new activation); if it fails
   * otherwise, the in-memory state is rolled back and the asks get UNAVAILABLE (retryable).
   */
  private async handleCoreBatch(items: CoreItem[]): Promise<void> {
    const base = { state: this.state, cursor: this.cursor };
    const replies: { msg: Respondable; ok?: Uint8Array; error?: TroupeError }[] = [];
    let dirty = false;
    for (const item of items) {
      const deadline = item.deadline;
      if (deadline !== undefined && deadline <= Date.now()) continue; // the asker has given up
      let payload: unknown;
      let sender: ActorAddress | undefined;
      try {
        payload = this.validate(item.type, item.payload);
        if (item.sender !== undefined) sender = parseAddress(item.sender);
      } catch (err) {
        if (item.via === 'ask') replies.push({ msg: item.msg, error: toTroupeError(err) });
        else
          this.log.warn({ err, type: item.type }, 'invalid message dropped (tell is at most once)');
        continue;
      }
      const info: MessageInfo = sender
        ? { type: item.type, via: item.via, sender }
        : { type: item.type, via: item.via };
      const turn = new Turn(this, info, false, this.cursor, deadline);
      try {
        const result = await this.runHandler(turn, payload);
        if (result?.state !== undefined) {
          // Checked once for the whole batch, before the commit (a large state, such as a budget
          // ledger's, costs more to check than its handler costs to run).
          this.state = result.state;
          dirty = true;
        }
        if (turn.drainedThrough > this.cursor) {
          this.cursor = turn.drainedThrough;
          dirty = true;
        }
        if (item.via === 'ask') replies.push({ msg: item.msg, ok: encodeJson(result?.reply) });
      } catch (err) {
        if (isFenced(err)) {
          this.replyAllMoved(items);
          throw err;
        }
        const error = toTroupeError(err);
        this.log.warn({ err, type: item.type, via: item.via }, 'handler failed');
        if (item.via === 'ask') replies.push({ msg: item.msg, error });
      }
    }
    if (dirty) {
      let checked: unknown;
      try {
        checked = this.validated(this.state);
      } catch (err) {
        // A handler produced a state its schema refuses: nothing of this batch is kept.
        this.state = base.state;
        this.cursor = base.cursor;
        this.log.error({ err }, 'handler produced an invalid state; batch rolled back');
        for (const r of replies) this.replyError(r.msg, toTroupeError(err));
        return;
      }
      try {
        await this.commitState(checked, this.cursor);
      } catch (err) {
        if (isFenced(err)) {
          this.replyAllMoved(items);
          throw err;
        }
        this.state = base.state;
        this.cursor = base.cursor;
        const unavailable = new TroupeError('UNAVAILABLE', `${this.key}: state commit failed`, {
          cause: err,
        });
        for (const r of replies) this.replyError(r.msg, r.error ?? unavailable);
        throw err;
      }
    }
    for (const r of replies) {
      if (r.error) this.replyError(r.msg, r.error);
      else r.msg.respond(r.ok);
    }
  }

  /**
   * Takes an ask that the placer handed over with the activation request: it is queued like one
   * that arrived on the actor's subject, and answered on the asker's reply subject with
   * {@link ANSWER_HEADER} (so the asker tells it from the placer's own reply).
   */
  acceptForwardedAsk(ask: ForwardedAsk): void {
    const nc = this.host.transport.nc;
    const msg: Respondable = {
      reply: ask.r,
      respond: (data, opts) => {
        const h = opts?.headers ?? natsHeaders();
        h.set(ANSWER_HEADER, '1');
        nc.publish(ask.r, data ?? new Uint8Array(), { headers: h });
        return true;
      },
    };
    if (this.stopping || this.ended) {
      this.replyError(msg, movedError(this.key, 'is passivating'));
      return;
    }
    if (ask.i === 1 && this.busy) {
      this.replyError(msg, new TroupeError('BUSY', `${this.key} is running a turn`));
      return;
    }
    const item: CoreItem = { msg, type: ask.t, via: 'ask', payload: ask.m };
    if (ask.d !== undefined) item.deadline = ask.d;
    if (ask.s !== undefined) item.sender = ask.s;
    this.queue.push(item);
    this.schedule();
  }

  private replyAllMoved(items: CoreItem[]): void {
    for (const item of items) {
      if (item.via === 'ask') this.replyError(item.msg, movedError(this.key, 'moved'));
    }
  }

  private replyError(msg: Respondable, error: TroupeError): void {
    if (!msg.reply) return;
    try {
      msg.respond(new Uint8Array(), { headers: encodeErrorHeaders(error) });
    } catch (err) {
      this.log.debug({ err }, 'could not send error reply');
    }
  }

  // ---- turns --------------------------------------------------------------------------------

  private async runHandler(turn: Turn, payload: unknown): Promise<HandlerResult<unknown> | void> {
    this.handledAny = true;
    const handler = (this.def.handlers as unknown as Record<string, AnyHandler>)[turn.info.type];
    if (!handler)
      throw new TroupeError('INVALID_ARGUMENT', `unknown message type '${turn.info.type}'`);
    this.inTurn = true;
    if (this.def.trackRunning) await this.markDirectory('IDLE', 'RUNNING');
    try {
      return await handler(this.contextFor(turn), payload, this.state);
    } finally {
      this.inTurn = false;
      turn.close();
      if (this.def.trackRunning && !this.ended) await this.markDirectory('RUNNING', 'IDLE');
    }
  }

  private validate(type: string, payload: unknown): unknown {
    const schema = this.def.messages[type];
    if (!schema) {
      const known = Object.keys(this.def.messages).join(', ');
      throw new TroupeError(
        'INVALID_ARGUMENT',
        `type: '${type}' is not a message of actor kind '${this.def.kind}' (known: ${known})`,
      );
    }
    const parsed = schema.safeParse(payload);
    if (!parsed.success) throw fromZodError(parsed.error, { prefix: type });
    return parsed.data;
  }

  private validated(state: unknown): unknown {
    const parsed = this.def.state.safeParse(state);
    if (!parsed.success) {
      throw new TroupeError('INTERNAL', `handler of ${this.key} produced an invalid state`, {
        cause: fromZodError(parsed.error, { prefix: 'state' }),
      });
    }
    return parsed.data;
  }

  /** The current state: the last committed, or what a handler of the current batch left. */
  private get state(): unknown {
    if (this.stateRecordJson !== undefined) {
      this.stateValue = (decodeJson(this.stateRecordJson) as StateRecord).data;
      this.stateRecordJson = undefined;
    }
    return this.stateValue;
  }

  private set state(state: unknown) {
    this.stateValue = state;
    this.stateRecordJson = undefined;
  }

  /**
   * Commits state and cursor in one compare-and-set; a stale revision fences this activation.
   * `keep: 'encoded'`: the caller goes on changing `state` (a checkpoint that skips validation,
   * which would have copied it); the state is encoded before this yields, and the committed
   * version is decoded again only if needed (a retry of the message, the next message).
   */
  async commitState(
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
    this.revision = await this.host.states.commitEncoded(this.address, this.revision, data);
    if (keep === 'encoded') {
      this.stateValue = undefined;
      this.stateRecordJson = data;
    } else {
      this.state = state;
    }
    this.cursor = cursor;
    // A retry of this message in this activation resumes from the checkpoint, like a replay.
    this.pendingTurn = turn;
  }

  /** Cursor of the last commit (for drains and checkpoints). */
  get committedCursor(): number {
    return this.cursor;
  }

  private context(info: MessageInfo, resumed: boolean): ActorContext<unknown> {
    return this.contextFor(new Turn(this, info, resumed, this.cursor));
  }

  private contextFor(turn: Turn): ActorContext<unknown> {
    return new TurnContext(this, turn, this.abort.signal);
  }

  /** @internal for {@link TurnContext} */
  get refsForSelf(): RefFactory {
    return this.host.refsFor(this.address);
  }

  /** @internal for {@link TurnContext} */
  get logger(): Logger {
    return this.log;
  }

  /** @internal for {@link TurnContext}: whether checkpoints validate the state. */
  get validatesCheckpoints(): boolean {
    return this.def.validateCheckpoints;
  }

  /** @internal for {@link TurnContext} */
  validateState(state: unknown): unknown {
    return this.validated(state);
  }

  // ---- directory ----------------------------------------------------------------------------

  /**
   * Moves our directory entry from `from` (any live state when undefined) to `to`, by CAS and only
   * while it still names this host, incarnation and epoch; otherwise we have been fenced.
   */
  private async markDirectory(
    from: 'ACTIVATING' | 'IDLE' | 'RUNNING' | undefined,
    to: 'IDLE' | 'RUNNING' | 'SLEEPING',
    reason?: string,
  ): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const { entry, revision } = await this.host.directory.get(this.address);
      const ours =
        entry.hostId === this.host.hostId &&
        (entry.incarnation === undefined || entry.incarnation === this.host.incarnation) &&
        entry.epoch === this.epoch &&
        (from === undefined ? entry.state !== 'SLEEPING' && entry.state !== 'STOPPED' : true);
      if (!ours) {
        throw new FencedDirectory(
          this.address,
          `directory names ${entry.hostId ?? '-'} epoch ${entry.epoch}`,
        );
      }
      if (entry.state === to) return;
      const next =
        to === 'SLEEPING'
          ? { state: to, epoch: this.epoch, updatedAtMs: Date.now(), ...(reason ? { reason } : {}) }
          : { ...entry, state: to, updatedAtMs: Date.now() };
      const rev = await this.host.directory.compareAndSet(this.address, revision, next);
      if (rev !== undefined) return;
    }
    throw new FencedDirectory(this.address, 'directory entry kept changing');
  }

  /** First IDLE write straight at the revision the placer gave us (no read); false if stale. */
  private async tryMarkIdleAtHint(): Promise<boolean> {
    const { directoryRevision, jobId } = this.placement;
    if (directoryRevision === undefined) return false;
    const rev = await this.host.directory.compareAndSet(this.address, directoryRevision, {
      state: 'IDLE',
      hostId: this.host.hostId,
      incarnation: this.host.incarnation,
      epoch: this.epoch,
      ...(jobId ? { jobId } : {}),
      updatedAtMs: Date.now(),
    });
    return rev !== undefined;
  }

  /** After passivating: if a post slipped in, ask for a new activation so it is not stranded. */
  private async rewakeIfPending(): Promise<void> {
    try {
      const next = await this.nextInbox(this.cursor);
      if (!next) return;
      await this.host.transport.activate(this.address, { timeoutMs: 10_000 });
    } catch (err) {
      this.log.warn({ err }, 'could not re-wake after passivation; the inbox watcher will');
    }
  }
}

/** A handler with its types erased: payload and state were validated against the schemas. */
type AnyHandler = (
  ctx: ActorContext<unknown>,
  msg: unknown,
  state: unknown,
) => Promise<HandlerResult<unknown> | void> | HandlerResult<unknown> | void;

class FencedDirectory extends TroupeError {
  constructor(addr: ActorAddress, detail: string) {
    super('UNAVAILABLE', `activation of ${addr.kind}/${addr.id} was fenced: ${detail}`, {
      retryable: false,
      details: { fenced: true },
    });
  }
}

/** State of one turn: its deadline, what it drained, its checkpoints. */
class Turn {
  drainedThrough: number;
  private closed = false;
  private readonly listenerRemovers: (() => void)[] = [];

  constructor(
    private readonly activation: Activation,
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
    return AbortSignal.any([parent, AbortSignal.timeout(remaining)]);
  }

  async drain(): Promise<InboxMessage[]> {
    if (this.closed) throw new TroupeError('INTERNAL', 'drainInbox() called after the turn ended');
    const from = Math.max(this.drainedThrough, this.activation.committedCursor, this.info.seq ?? 0);
    const { messages, through } = await this.activation.drainAfter(from);
    this.drainedThrough = through;
    return messages;
  }

  async checkpoint(state: unknown, keep: 'value' | 'encoded'): Promise<void> {
    if (this.closed) throw new TroupeError('INTERNAL', 'checkpoint() called after the turn ended');
    const cursor = this.activation.committedCursor;
    if (this.info.via === 'post' && this.info.seq !== undefined) {
      await this.activation.commitState(
        state,
        cursor,
        { seq: this.info.seq, drainedThrough: Math.max(this.drainedThrough, this.info.seq) },
        keep,
      );
    } else {
      await this.activation.commitState(
        state,
        Math.max(cursor, this.drainedThrough),
        undefined,
        keep,
      );
    }
  }

  /** See {@link ActorContext.onMail}; the listener is removed when the turn ends. */
  onMail(listener: () => void): () => void {
    if (this.closed) return () => undefined;
    const remove = this.activation.addMailListener(listener);
    this.listenerRemovers.push(remove);
    return remove;
  }

  close(): void {
    this.closed = true;
    for (const remove of this.listenerRemovers.splice(0)) remove();
  }
}

/** The sequence a mail hint names, if it names one. */
function hintSeq(m: unknown): number | undefined {
  const seq = typeof m === 'object' && m !== null ? (m as { seq?: unknown }).seq : undefined;
  return typeof seq === 'number' && Number.isSafeInteger(seq) && seq > 0 ? seq : undefined;
}

function inboxInfo(stored: StoredMsg): MessageInfo & { seq: number } {
  const h: MsgHdrs | undefined = stored.header;
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

/**
 * What a handler sees of one turn. A class rather than an object literal: signals and refs are
 * built on first use (most turns never touch them, and AbortSignal.any plus a timer per message
 * would dominate a short handler), and prototype getters make the per-message object cheap.
 */
class TurnContext implements ActorContext<unknown> {
  private signalCache?: AbortSignal;
  private refsCache?: RefFactory;

  constructor(
    private readonly activation: Activation,
    private readonly turn: Turn,
    private readonly parentSignal: AbortSignal,
  ) {}

  get self(): ActorAddress {
    return this.activation.address;
  }
  get epoch(): number {
    return this.activation.epoch;
  }
  get log(): Logger {
    return this.activation.logger;
  }
  get signal(): AbortSignal {
    return (this.signalCache ??= this.turn.signal(this.parentSignal));
  }
  get message(): MessageInfo {
    return this.turn.info;
  }
  get resumed(): boolean {
    return this.turn.resumed;
  }
  get refs(): RefFactory {
    return (this.refsCache ??= this.activation.refsForSelf);
  }
  drainInbox(): Promise<InboxMessage[]> {
    return this.turn.drain();
  }
  onMail(listener: () => void): () => void {
    return this.turn.onMail(listener);
  }
  checkpoint(state: unknown): Promise<void> {
    // Validation copies the state; without it the commit keeps the encoded copy instead (the
    // turn goes on changing its object, and a retry must start from what was committed).
    return this.activation.validatesCheckpoints
      ? this.turn.checkpoint(this.activation.validateState(state), 'value')
      : this.turn.checkpoint(state, 'encoded');
  }
}
