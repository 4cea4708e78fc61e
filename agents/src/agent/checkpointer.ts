import type { StoredMessage } from './agent-state';
import type { TrajectoryEvent } from './trajectory-event';

/** What a {@link Checkpointer} writes through (an agent turn: its trajectory store and context). */
export interface CheckpointerOptions<S extends { eventSeq: number }> {
  /** The working copy of the state; `eventSeq` numbers the events. */
  state: S;
  /** Session the events belong to. */
  sessionId: string;
  /** Fencing epoch of the activation, stamped on every event. */
  epoch: number;
  /** Clock for the events' `atMs`. */
  now: () => number;
  /** Publishes one trajectory event. */
  append: (event: TrajectoryEvent) => Promise<unknown>;
  /**
   * Commits the state. Must read `state` (encode it) before it first yields: the turn goes on
   * changing it while the commit is written.
   */
  checkpoint: (state: S) => Promise<void>;
}

/**
 * The trajectory events and checkpoints of one turn. Events are published as they are emitted
 * (or, deferred, with the next commit); a checkpoint waits for the events before it and may
 * overlap what the turn does next. Checkpoints are compare-and-sets on the revision the last one
 * returned, so one is in flight at a time: a checkpoint asked for while one is in flight starts
 * when that one has landed. A failed checkpoint or publish fails every later {@link settle} and
 * commit until {@link abandon}.
 */
export class Checkpointer<S extends { eventSeq: number }> {
  /** Publishes since the last commit started: that commit's settle surfaces their errors. */
  private pending: Promise<unknown>[] = [];
  /** Events emitted with `defer`, not yet published. */
  private readonly deferred: TrajectoryEvent[] = [];
  /** The checkpoint started by {@link commitSoon} and not yet waited for. */
  private inflight: Promise<void> | undefined;

  constructor(private readonly o: CheckpointerOptions<S>) {}

  /** True when events were emitted since the last commit started. */
  get uncommitted(): boolean {
    return this.pending.length > 0 || this.deferred.length > 0;
  }

  /**
   * Appends a trajectory event with the next `seq`: published now — or, with `defer`, with the
   * next commit or the next event that is not deferred (so the stream keeps seq order), which
   * saves a socket write per step — and awaited at the next commit. Returns its `seq`.
   */
  emit(
    runId: string,
    type: TrajectoryEvent['type'],
    messages: StoredMessage[] | undefined,
    data: Record<string, unknown> = {},
    options: { defer?: boolean } = {},
  ): number {
    const seq = ++this.o.state.eventSeq;
    const event: TrajectoryEvent = {
      sessionId: this.o.sessionId,
      seq,
      epoch: this.o.epoch,
      runId,
      atMs: this.o.now(),
      type,
      ...(messages ? { messages } : {}),
      data,
    };
    if (options.defer) {
      this.deferred.push(event);
      return seq;
    }
    this.publishDeferred();
    this.publish(event);
    return seq;
  }

  /** Waits for the events emitted so far and checkpoints the state. */
  async commit(): Promise<void> {
    await this.commitSoon();
    await this.settle();
  }

  /**
   * Starts checkpointing the state (with the events emitted so far) and returns without waiting
   * for it: the next model call overlaps it. Whatever must follow it — the next checkpoint, a tool
   * with an external effect, the end of the turn — waits for it ({@link settle}).
   */
  async commitSoon(): Promise<void> {
    // One at a time (a drain on a mail hint may commit while the loop waits): wait until none is
    // in flight. With none, the checkpoint starts before this first yields.
    while (this.inflight) await this.settle();
    // Deferred events and the checkpoint leave in the same tick: one socket write.
    this.publishDeferred();
    const pending = this.pending;
    this.pending = [];
    // The state is encoded before checkpoint() first yields, so what is written is this point of
    // the turn even though the turn goes on while it is written.
    const done = Promise.all([...pending, this.o.checkpoint(this.o.state)]).then(() => undefined);
    done.catch(() => undefined); // surfaced by settle()
    this.inflight = done;
  }

  /** Waits for the checkpoint in flight, if any; throws its error (again at every later call). */
  async settle(): Promise<void> {
    const inflight = this.inflight;
    if (!inflight) return;
    await inflight;
    if (this.inflight === inflight) this.inflight = undefined;
  }

  /** Waits for the checkpoint in flight, if any, ignoring its error (a turn that failed). */
  async quiesce(): Promise<void> {
    await this.inflight?.catch(() => undefined);
  }

  /**
   * Forgets a failed attempt: the publishes since the last commit started (their errors were the
   * failure) and the checkpoint in flight, once it is over. Deferred events stay, to be published
   * with the next commit.
   */
  async abandon(): Promise<void> {
    this.pending = [];
    await this.quiesce();
    this.inflight = undefined;
  }

  private publish(event: TrajectoryEvent): void {
    const p = this.o.append(event);
    p.catch(() => undefined); // awaited (and its error surfaced) by the next commit
    this.pending.push(p);
  }

  private publishDeferred(): void {
    for (const e of this.deferred.splice(0)) this.publish(e);
  }
}
