import { setMaxListeners } from 'node:events';
import {
  type ActorAddress,
  actorSubject,
  delay,
  ErrorReason,
  formatAddress,
  hasReason,
  invalidArgument,
  inboxStreamName,
  inboxSubject,
  type Logger,
  TroupeError,
} from '@troupe/proto';
import { type Msg, type Subscription } from '@nats-io/transport-node';
import { type JetStreamManager } from '@nats-io/jetstream';
import {
  type AnyActorDefinition,
  type HandlerResult,
  type InvalidMessage,
  parseMessage,
} from '../actor-definition';
import { type ActorContext, type InboxMessage, type MessageInfo } from '../actor-context';
import { type Directory } from '../directory';
import { type RefFactory } from '../ref-factory';
import { FencedError, type StateStore, type StoredState } from '../state-store';
import { ActivationEntry } from './activation-entry';
import { AskRepeats } from './ask-repeats';
import { handleCoreBatch, MAX_CORE_BATCH } from './core-batch';
import {
  type CoreItem,
  coreItem,
  forwardedAskReply,
  movedError,
  readEnvelope,
  replyAllMoved,
  replyError,
  type Respondable,
} from './core-item';
import { directGetNext, leaderGetNext } from './direct-get';
import { hintSeq, InboxReader, type PushedMessage } from './inbox-reader';
import {
  type ActivationPlacement,
  type CoreEnvelope,
  type ForwardedAsk,
  MAIL_HINT_TYPE,
  racedError,
} from './protocol';
import { PostedMessages } from './posted-messages';
import { StateCell } from './state-cell';
import { type Transport } from './transport';
import { Turn, TurnContext, type TurnRunner } from './turn';

/** Minimum idle time of a fresh activation before its first message. */
const FIRST_MESSAGE_GRACE_MS = 2_000;
/**
 * Longest pause between pump retries while infrastructure trouble lasts: also the longest a
 * message waits once the trouble is over. A retry that meets a stream without a leader costs one
 * round trip ("no responders"); one that meets an unreachable server waits out its timeout.
 */
const PUMP_RETRY_MAX_MS = 1_000;
/** Longest pause between attempts to release the directory entry of an ended activation. */
const RELEASE_RETRY_MAX_MS = 1_000;
/** How long an activation that ended keeps trying to release its directory entry. */
const RELEASE_RETRY_MS = 120_000;
/**
 * How long a stop may wait for its turn to end and its subscription to drain before it says
 * what it waits on: meanwhile every ask is answered "is passivating", so a stop that hangs
 * strands the actor (chaos seed 45007).
 */
const SLOW_STOP_MS = 10_000;

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

/** Why an activation ended. */
export type EndReason = 'idle' | 'shutdown' | 'fenced' | 'deactivated' | 'failed';

/**
 * One live activation of an actor: a single-threaded mailbox over core NATS (ask/tell) and the
 * actor's durable inbox (post), with state and inbox cursor committed by compare-and-set. What it
 * delegates: the state and its commits ({@link StateCell}), the directory entry
 * ({@link ActivationEntry}), when and what to read of the inbox ({@link InboxReader}), groups of
 * asks/tells ({@link handleCoreBatch}) and each turn's context ({@link Turn}).
 */
export class Activation implements TurnRunner {
  readonly address: ActorAddress;
  readonly key: string;
  readonly log: Logger;
  readonly cell: StateCell;
  private readonly entry: ActivationEntry;
  private readonly inbox: InboxReader;
  private readonly posted: PostedMessages;
  private readonly queue: CoreItem[] = [];
  /** The asks taken, for their repeats (see {@link AskRepeats}). */
  private askRepeats?: AskRepeats;
  /** Consecutive pump failures (infrastructure trouble), for the retry pause. */
  private pumpFailures = 0;
  /** False until start() has loaded the state: messages that arrive earlier wait in the queue. */
  private ready = false;
  private sub?: Subscription;
  private pumping = false;
  private inTurn = false;
  /** The type of the message whose turn runs (while {@link inTurn}). */
  private turnType: string | undefined;
  private ended = false;
  private stopping = false;
  /** Set once the SLEEPING write is issued: see {@link holdsSlot}. */
  private releasing = false;
  /** Set when a newer activation owns the actor (see {@link fence}). */
  private fencedFlag = false;
  private idleTimer?: NodeJS.Timeout;
  /** Aborted when fenced or when the shutdown grace ends; made on first use (see signal). */
  private abortController?: AbortController;
  /** Listeners of running turns, told of mail hints (see {@link ActorContext.onMail}). */
  private mailListeners?: Set<() => void>;
  private handledAny = false;
  /** Set by {@link passivateWhenIdle}: the next idle moment ends the activation. */
  private passivateSoon = false;
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
    this.cell = new StateCell(def, this.address, epoch, host.states);
    this.entry = new ActivationEntry(host, this.address, epoch, placement.jobId, def.retireWithJob);
    const { cluster } = host.transport;
    const stream = inboxStreamName(cluster);
    const subject = inboxSubject(cluster, this.address);
    this.inbox = new InboxReader(
      (after) => directGetNext(host.transport.requester, stream, subject, after + 1),
      this.cell,
      (after) => leaderGetNext(host.jsm, stream, subject, after + 1),
    );
    this.posted = new PostedMessages(this, this.inbox, host.transport, def.maxAttempts);
  }

  /** True once started and until it begins to stop (passivating, fenced, shutting down). */
  get accepting(): boolean {
    return this.ready && !this.stopping && !this.ended;
  }

  /**
   * False once this activation writes its entry SLEEPING: it ends right after that write, whatever
   * its outcome, and the coordinator frees the slot as soon as its watch sees the write, which
   * may be before this host hears the ack. A host that still counted the slot refused the
   * placement the coordinator made into it (one wasted round trip, and the request went to the
   * back of the fair queue: the 1:3 scheduling test saw job-b at 2/3 instead of 3/4).
   */
  get holdsSlot(): boolean {
    return !this.releasing && !this.ended;
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
    const { claimRevision, directoryRevision } = this.placement;
    if (claimRevision !== undefined) {
      await this.startClaiming(claimRevision);
      return;
    }
    this.cell.load(await this.host.states.claim(this.address, this.epoch));
    this.subscribe();
    this.hintPending();
    await this.runOnActivate();
    // Two-step form: first IDLE write straight at the revision the placer wrote ACTIVATING at.
    const markedAtHint =
      directoryRevision !== undefined && (await this.entry.claimIdle(directoryRevision));
    if (!markedAtHint) await this.entry.mark('ACTIVATING', 'IDLE');
    this.ready = true;
    this.schedule();
  }

  /**
   * One-step activation (the placer read the entry SLEEPING at `claimRevision` and wrote
   * nothing). In parallel: claims the directory entry SLEEPING → IDLE at this epoch by CAS, reads
   * the state record, and (unless an ask came with the request: such activations rarely have
   * mail) reads the first inbox message after cursor 0, used when the record says cursor 0 —
   * always for an actor that never committed (see {@link InboxReader.prefetch}; the read after
   * subscribing is on the same connection, so the server registers the subscription first). Only
   * the CAS winner subscribes — a loser that had subscribed would receive the same core requests
   * as the winner and could answer one "moved" before the winner answers it, making the asker run
   * it twice — and claims the state record (epoch bump). Messages that arrive before the state is
   * loaded wait.
   */
  private async startClaiming(claimRevision: number): Promise<void> {
    const [dir, state, inbox] = await Promise.allSettled([
      this.entry.claimIdle(claimRevision),
      this.host.states.read(this.address),
      this.placement.withAsk ? Promise.resolve(null) : this.inbox.read(0),
    ]);
    if (dir.status === 'rejected') throw dir.reason;
    if (!dir.value) {
      throw racedError(`${this.key}: the directory entry changed before this host could claim it`);
    }
    this.subscribe();
    this.hintPending();
    this.inbox.prefetch(0, inbox.status === 'fulfilled' ? inbox.value : null);
    if (state.status === 'rejected') throw state.reason;
    const current: StoredState | undefined = state.value;
    this.cell.load(await this.host.states.claim(this.address, this.epoch, { current }));
    await this.runOnActivate();
    this.ready = true;
    this.schedule();
  }

  /** The post that woke the actor counts as hinted: its read goes on until it shows. */
  private hintPending(): void {
    const seq = this.placement.pendingSeq;
    if (seq !== undefined) this.inbox.hinted(seq);
  }

  private subscribe(): void {
    // Fenced while it started (its host declared dead as the placer's request reached it): a
    // subscription made now would never be drained, and would answer every ask of the actor
    // "is passivating" ahead of the live activation, for good (chaos seed 45007).
    if (this.ended) throw new FencedError(this.address, 'fenced while it started');
    this.sub = this.host.transport.nc.subscribe(
      actorSubject(this.host.transport.cluster, this.address),
      {
        callback: (err, msg) => {
          if (!err) this.onCoreMessage(msg);
        },
      },
    );
    this.inbox.hintsSubscribed();
  }

  private async runOnActivate(): Promise<void> {
    if (!this.def.onActivate) return;
    const ctx = this.context({ type: '$activate', via: 'tell' });
    const result = await this.def.onActivate(ctx, this.cell.state);
    if (result?.state !== undefined) {
      await this.cell.commit(this.cell.validated(result.state), this.cell.cursor);
    }
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
    replyAllMoved(this.queue.splice(0), this.key, this.log, 'is passivating');
    let waitingOn = 'its turn';
    const startedAt = Date.now();
    const slow = setInterval(() => {
      this.log.warn(
        { reason, turn: this.inTurn ? this.turnType : undefined, waitedMs: Date.now() - startedAt },
        `stopping: still waiting for ${waitingOn}`,
      );
    }, SLOW_STOP_MS);
    slow.unref();
    try {
      await this.pumpDone;
      waitingOn = 'its subscription to drain';
      await drained;
    } finally {
      clearInterval(slow);
    }
    if (this.ended) return;
    if (this.def.onDeactivate) {
      try {
        await this.def.onDeactivate(
          this.context({ type: '$deactivate', via: 'tell' }),
          this.cell.state,
        );
      } catch (err) {
        this.log.warn({ err }, 'onDeactivate failed');
      }
    }
    this.releasing = true;
    const released = await this.release(reason);
    this.end(reason);
    if (released && (reason === 'idle' || reason === 'deactivated')) await this.rewakeIfPending();
  }

  /**
   * Marks the directory entry SLEEPING. When that fails (the directory's stream without a leader
   * during a NATS server restart) the entry would go on naming this host for an activation that
   * has ended — asks would find nobody, posts would hint nobody, placers would count a slot — so
   * it is retried in the background; a placer that finds the entry stale first puts it to sleep
   * itself (`verifyLive`), and the retry then stops as fenced.
   */
  private async release(reason: EndReason): Promise<boolean> {
    try {
      await this.entry.mark(undefined, 'SLEEPING', reason);
      return true;
    } catch (err) {
      if (hasReason(err, ErrorReason.FENCED)) return false;
      this.log.warn({ err }, 'could not release directory entry: retrying in the background');
      void this.releaseLater(reason);
      return false;
    }
  }

  private async releaseLater(reason: EndReason): Promise<void> {
    const until = Date.now() + RELEASE_RETRY_MS;
    for (let attempt = 1, pauseMs = 250; Date.now() < until; attempt++) {
      await delay(pauseMs, undefined, { unref: true });
      pauseMs = Math.min(pauseMs * 2, RELEASE_RETRY_MAX_MS);
      if (this.host.transport.nc.isClosed()) return;
      try {
        await this.entry.mark(undefined, 'SLEEPING', reason);
        this.log.info({ attempts: attempt }, 'released directory entry');
        if (reason === 'idle' || reason === 'deactivated') await this.rewakeIfPending();
        return;
      } catch (err) {
        if (hasReason(err, ErrorReason.FENCED)) return;
      }
    }
    this.log.warn({}, 'gave up releasing directory entry: a placer that finds it stale will');
  }

  /** Fences this activation: a newer one owns the actor. Stops at once without writing. */
  fence(): void {
    if (this.ended) return;
    this.fencedFlag = true;
    this.stopping = true;
    this.clearIdle();
    // Drain, as a passivation does: an ask the server routed here before it saw the UNSUB is told
    // the actor moved. Unsubscribed, the client dropped it and the asker heard nothing until its
    // silence watch gave up (chaos seed 9420: a task's `wait` to a sandbox whose node agent was
    // declared dead that moment; the attempt failed after 4 s).
    void this.sub?.drain().catch(() => undefined);
    this.abort(new TroupeError('CANCELLED', `${this.key} was fenced by a newer activation`));
    replyAllMoved(this.queue.splice(0), this.key, this.log);
    this.end('fenced');
    try {
      this.def.onFenced?.(this.address, this.epoch, this.refsForSelf());
    } catch (err) {
      this.log.warn({ err }, 'onFenced failed');
    }
  }

  /** Aborts a running turn (shutdown grace expired). */
  abortTurn(reason: TroupeError): void {
    this.abort(reason);
  }

  /**
   * Aborted when the activation is fenced or its host's shutdown grace ends: the parent of every
   * turn's `ctx.signal`. Made on first use: most activations never need one, and an idle
   * activation should cost little memory.
   */
  get signal(): AbortSignal {
    if (!this.abortController) {
      this.abortController = new AbortController();
      // Every call a turn makes listens to it (directly, or through the turn's deadline).
      setMaxListeners(0, this.abortController.signal);
    }
    return this.abortController.signal;
  }

  private abort(reason: TroupeError): void {
    (this.abortController ??= new AbortController()).abort(reason);
  }

  private end(reason: EndReason): void {
    if (this.ended) return;
    this.ended = true;
    this.log.debug({ reason }, 'activation ended');
    this.host.onEnded(this);
  }

  /** After passivating: if a post slipped in, ask for a new activation so it is not stranded. */
  private async rewakeIfPending(): Promise<void> {
    try {
      const next = await this.inbox.read(this.cell.cursor);
      if (!next) return;
      await this.host.transport.activate(this.address, { timeoutMs: 10_000 });
    } catch (err) {
      this.log.warn({ err }, 'could not re-wake after passivation; the inbox watcher will');
    }
  }

  // ---- mailbox ------------------------------------------------------------------------------

  private onCoreMessage(msg: Msg): void {
    if (this.stopping) {
      if (msg.reply) replyError(msg, movedError(this.key, 'is passivating'), this.log);
      return;
    }
    const envelope = readEnvelope(msg);
    if (envelope instanceof TroupeError) {
      if (msg.reply) replyError(msg, envelope, this.log);
      else this.log.warn({ err: envelope }, 'malformed message dropped (tell is at most once)');
      return;
    }
    if (Array.isArray(envelope)) {
      // A batch of tells (and mail hints), in the order they were made.
      let malformed = 0;
      for (const e of envelope) {
        if (!e) malformed++;
        else this.onTell(msg, e);
      }
      if (malformed > 0) {
        this.log.warn({ malformed }, 'malformed tells of a batch dropped (tell is at most once)');
      }
      return;
    }
    if (!msg.reply) this.onTell(msg, envelope);
    else if (envelope.t === MAIL_HINT_TYPE) {
      // A hint is a tell: an ask of that type would otherwise wait for an answer until its
      // deadline.
      replyError(
        msg,
        invalidArgument(
          'payload.t',
          `${MAIL_HINT_TYPE} is reserved for mail hints, which are tells`,
        ),
        this.log,
      );
    } else
      this.takeAsk(
        this.host.transport.keepalive.track(msg, envelope.d, false, envelope.k),
        envelope,
      );
  }

  /** Queues an ask, unless it repeats one this activation took (then it joins that one). */
  private takeAsk(msg: Respondable, envelope: CoreEnvelope): void {
    const first =
      envelope.n === undefined
        ? msg
        : (this.askRepeats ??= new AskRepeats()).admit(envelope.n, envelope.d, msg);
    if (first) this.enqueue(first, 'ask', envelope);
  }

  /** A tell, or a mail hint. */
  private onTell(msg: Msg, envelope: CoreEnvelope): void {
    if (envelope.t === MAIL_HINT_TYPE) {
      this.mailHinted(hintSeq(envelope.m));
      this.schedule(); // even a stale hint restarts the idle timer
      return;
    }
    this.enqueue(msg, 'tell', envelope);
  }

  /**
   * Takes an ask that the placer handed over with the activation request: it is queued like one
   * that arrived on the actor's subject, and answered on the asker's reply subject.
   */
  acceptForwardedAsk(ask: ForwardedAsk): void {
    const msg = forwardedAskReply(this.host.transport.nc, ask);
    if (this.stopping || this.ended) {
      replyError(msg, movedError(this.key, 'is passivating'), this.log);
      return;
    }
    // Its asker starts watching this host when it first hears from it: say so at once.
    this.takeAsk(this.host.transport.keepalive.track(msg, ask.d, true, ask.k), ask);
  }

  /** Queues an ask or tell; an ask that requires an idle actor is refused while one is busy. */
  private enqueue(msg: Respondable, via: 'ask' | 'tell', envelope: CoreEnvelope): void {
    if (via === 'ask' && envelope.i === 1 && this.busy) {
      replyError(msg, new TroupeError('BUSY', `${this.key} is running a turn`), this.log);
      return;
    }
    this.queue.push(coreItem(msg, via, envelope));
    this.schedule();
  }

  /**
   * "You have mail" (over NATS, or from a post in this process): the inbox is read again, and a
   * drain in a running turn reads it. A hint that names a message already applied is stale.
   * Returns false when this activation is stopping or ended: the hint is for whichever comes next.
   * `push`: the message itself, from the placer's inbox watcher in this process.
   */
  mailHinted(seq: number | undefined, push?: PushedMessage): boolean {
    if (this.stopping || this.ended) return false;
    if (push) this.inbox.pushed(push);
    if (!this.inbox.hinted(seq)) return true;
    for (const listener of this.mailListeners ?? []) {
      try {
        listener();
      } catch (err) {
        this.log.warn({ err }, 'mail listener failed');
      }
    }
    this.schedule();
    return true;
  }

  /** Calls `listener` at each mail hint until the returned function is called. */
  addMailListener(listener: () => void): () => void {
    const wrapped = () => listener();
    (this.mailListeners ??= new Set()).add(wrapped);
    return () => this.mailListeners?.delete(wrapped);
  }

  private schedule(): void {
    this.clearIdle();
    if (this.pumping || this.ended || !this.ready) return;
    this.pumping = true;
    this.pumpDone = this.pump().finally(() => {
      this.pumping = false;
      if (!this.ended && !this.stopping) {
        if (this.queue.length > 0 || this.inbox.wanted) this.schedule();
        else this.armIdle();
      }
    });
  }

  private async pump(): Promise<void> {
    try {
      // A stop lets the current turn finish, then no new one starts.
      // Posted messages and core asks/tells take turns: a steady stream of posts (a big job's
      // task outcomes) never starves an ask (a results page waiting on the job's snapshot).
      while (this.running()) {
        // A commit that failed unanswered may have landed, or the actor moved on meanwhile: no
        // turn (not even a read) runs on state the store may have passed.
        await this.cell.settle();
        if (this.inbox.wanted) {
          const next = await this.inbox.next();
          if (next) await this.posted.handle(next);
          this.pumpFailures = 0;
          if (!this.running()) return;
        }
        if (this.queue.length > 0) {
          await handleCoreBatch(this, this.queue.splice(0, MAX_CORE_BATCH));
        } else if (!this.inbox.wanted) {
          return;
        }
      }
    } catch (err) {
      if (hasReason(err, ErrorReason.FENCED)) {
        this.log.warn({ err }, 'fenced by a newer activation');
        this.fence();
        return;
      }
      // Infrastructure trouble (NATS down, a stream without a leader): keep the actor; retry the
      // pump after a pause that grows while the trouble lasts.
      this.pumpFailures++;
      const pauseMs = Math.min(PUMP_RETRY_MAX_MS, 250 * 2 ** Math.min(this.pumpFailures - 1, 2));
      this.log.error({ err, failures: this.pumpFailures, pauseMs }, 'mailbox pump failed');
      this.inbox.retry();
      await delay(pauseMs, undefined, { unref: true });
    }
  }

  /** Fenced, or its turns aborted at the end of the host's shutdown grace (see {@link abort}). */
  get abandoned(): boolean {
    return this.fencedFlag || this.abortController?.signal.aborted === true;
  }

  get coreWaiting(): boolean {
    return this.queue.length > 0;
  }

  get passivating(): boolean {
    return this.passivateSoon;
  }

  private running(): boolean {
    return !this.ended && !this.stopping && !this.abortController?.signal.aborted;
  }

  /** See {@link ActorContext.passivateWhenIdle}. */
  passivateWhenIdle(): void {
    this.passivateSoon = true;
  }

  private armIdle(): void {
    this.clearIdle();
    // Until the first message, wait at least FIRST_MESSAGE_GRACE_MS: the ask that caused the
    // activation is retried only after the placer's reply, and must find us still here. A timer
    // even when passivating at once: a message that arrives first (its hint) cancels it.
    const ms = this.passivateSoon
      ? 0
      : this.handledAny
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

  // ---- turns --------------------------------------------------------------------------------

  /**
   * The definition's `onInvalid` for a posted message that failed validation; returns the state
   * to commit with the cursor. Its own failures are logged (the message is dead-lettered anyway),
   * except a store outage or fencing, which the pump handles as for any turn.
   */
  async runOnInvalid(turn: Turn, invalid: InvalidMessage): Promise<unknown> {
    const onInvalid = this.def.onInvalid;
    if (!onInvalid) return this.cell.state;
    this.inTurn = true;
    this.turnType = invalid.type;
    try {
      const result = await onInvalid(this.contextFor(turn), invalid, this.cell.state);
      return result?.state !== undefined ? this.cell.validated(result.state) : this.cell.state;
    } catch (err) {
      if (hasReason(err, ErrorReason.FENCED) || hasReason(err, ErrorReason.STORE_UNAVAILABLE))
        throw err;
      this.log.warn({ err, type: invalid.type }, 'onInvalid failed');
      return this.cell.state;
    } finally {
      this.inTurn = false;
      turn.close();
    }
  }

  /** Messages posted after `after`, validated; invalid ones are dead-lettered and skipped. */
  drainAfter(after: number): Promise<{ messages: InboxMessage[]; through: number }> {
    return this.posted.drainAfter(after);
  }

  async runHandler(turn: Turn, payload: unknown): Promise<HandlerResult<unknown> | void> {
    this.handledAny = true;
    const handler = (this.def.handlers as unknown as Record<string, AnyHandler>)[turn.info.type];
    if (!handler)
      throw new TroupeError('INVALID_ARGUMENT', `unknown message type '${turn.info.type}'`);
    this.inTurn = true;
    this.turnType = turn.info.type;
    if (this.def.trackRunning) await this.entry.mark('IDLE', 'RUNNING');
    try {
      return await handler(this.contextFor(turn), payload, this.cell.state);
    } finally {
      this.inTurn = false;
      turn.close();
      if (this.def.trackRunning && !this.ended) await this.entry.mark('RUNNING', 'IDLE');
    }
  }

  validate(type: string, payload: unknown): unknown {
    return parseMessage(this.def, type, payload);
  }

  get validatesCheckpoints(): boolean {
    return this.def.validateCheckpoints;
  }

  refsForSelf(): RefFactory {
    return this.host.refsFor(this.address);
  }

  private context(info: MessageInfo): ActorContext<unknown> {
    return this.contextFor(new Turn(this, info, false, this.cell.cursor));
  }

  private contextFor(turn: Turn): ActorContext<unknown> {
    return new TurnContext(turn);
  }
}

/** A handler with its types erased: payload and state were validated against the schemas. */
type AnyHandler = (
  ctx: ActorContext<unknown>,
  msg: unknown,
  state: unknown,
) => Promise<HandlerResult<unknown> | void> | HandlerResult<unknown> | void;
