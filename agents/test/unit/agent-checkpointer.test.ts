import { Checkpointer } from '../../src/agent/checkpointer';
import type { TrajectoryEvent } from '../../src/agent/trajectory-event';

interface State {
  eventSeq: number;
  step: number;
}

interface Pending<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (err: Error) => void;
}

function pending<T>(): Pending<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every promise chain that can move on do so (all microtasks run before it). */
const flush = () => new Promise<void>((r) => setImmediate(r));

/**
 * A fake trajectory stream and state store: records what is written in order, and leaves each
 * checkpoint (and, when asked, each publish) in flight until the test settles it.
 */
class FakeStore {
  readonly log: string[] = [];
  readonly published: TrajectoryEvent[] = [];
  readonly checkpoints: { step: number; eventSeq: number; done: Pending<void> }[] = [];
  readonly publishes: Pending<void>[] = [];
  holdPublishes = false;
  inFlight = 0;
  maxInFlight = 0;

  readonly append = (event: TrajectoryEvent): Promise<void> => {
    this.published.push(event);
    this.log.push(`publish ${event.seq}`);
    const p = pending<void>();
    this.publishes.push(p);
    if (!this.holdPublishes) p.resolve();
    return p.promise;
  };

  readonly checkpoint = (state: State): Promise<void> => {
    // Encoded before the first yield, as ActorContext.checkpoint does.
    const done = pending<void>();
    this.checkpoints.push({ step: state.step, eventSeq: state.eventSeq, done });
    this.log.push(`checkpoint step=${state.step}`);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    return done.promise.finally(() => this.inFlight--);
  };

  /** Lands checkpoint `i` (or fails it with `err`). */
  land(i: number, err?: Error): void {
    const c = this.checkpoints[i];
    if (!c) throw new Error(`no checkpoint ${i} (have ${this.checkpoints.length})`);
    if (err) c.done.reject(err);
    else c.done.resolve();
  }
}

function setup() {
  const state: State = { eventSeq: 0, step: 0 };
  const store = new FakeStore();
  let t = 1_000;
  const cp = new Checkpointer<State>({
    state,
    sessionId: 's1',
    epoch: 7,
    now: () => t++,
    append: store.append,
    checkpoint: store.checkpoint,
  });
  return { state, store, cp };
}

/** Tracks whether a promise has settled, without awaiting it. */
function track(p: Promise<unknown>) {
  const t = { done: false, error: undefined as unknown };
  p.then(
    () => (t.done = true),
    (err: unknown) => {
      t.done = true;
      t.error = err;
    },
  );
  return t;
}

describe('Checkpointer', () => {
  it('numbers events from the state and stamps them; publishes at once unless deferred', () => {
    const { state, store, cp } = setup();
    state.eventSeq = 41;
    expect(cp.emit('r1', 'run_start', [{ role: 'user', content: 'task' }], { a: 1 })).toBe(42);
    expect(cp.emit('r1', 'tool_result', undefined, {}, { defer: true })).toBe(43);
    expect(state.eventSeq).toBe(43);
    expect(store.published).toEqual([
      {
        sessionId: 's1',
        seq: 42,
        epoch: 7,
        runId: 'r1',
        atMs: 1_000,
        type: 'run_start',
        messages: [{ role: 'user', content: 'task' }],
        data: { a: 1 },
      },
    ]);
    expect(cp.uncommitted).toBe(true);
  });

  it('publishes deferred events before the next event that is not deferred, in seq order', () => {
    const { store, cp } = setup();
    cp.emit('r1', 'model_call', undefined, {}, { defer: true });
    cp.emit('r1', 'tool_call', undefined, {}, { defer: true });
    expect(store.published).toHaveLength(0);
    cp.emit('r1', 'message', undefined);
    expect(store.published.map((e) => e.seq)).toEqual([1, 2, 3]);
  });

  it('publishes deferred events with the checkpoint, in the same tick', async () => {
    const { store, cp } = setup();
    cp.emit('r1', 'model_call', undefined, {}, { defer: true });
    cp.emit('r1', 'tool_result', undefined, {}, { defer: true });
    await cp.commitSoon();
    expect(store.log).toEqual(['publish 1', 'publish 2', 'checkpoint step=0']);
    expect(cp.uncommitted).toBe(false);
  });

  it('commitSoon returns with the checkpoint in flight; settle waits for it', async () => {
    const { store, cp } = setup();
    await cp.commitSoon();
    expect(store.checkpoints).toHaveLength(1);
    const settled = track(cp.settle());
    await flush();
    expect(settled.done).toBe(false);
    store.land(0);
    await flush();
    expect(settled).toEqual({ done: true, error: undefined });
  });

  it('writes the state as it was when the checkpoint started, while the turn goes on', async () => {
    const { state, store, cp } = setup();
    state.step = 1;
    await cp.commitSoon();
    state.step = 2; // the next model call, overlapping the checkpoint
    store.land(0);
    await cp.settle();
    expect(store.checkpoints.map((c) => c.step)).toEqual([1]);
  });

  it('starts a checkpoint asked for while one is in flight only once that one has landed', async () => {
    const { state, store, cp } = setup();
    state.step = 1;
    await cp.commitSoon();
    state.step = 2;
    cp.emit('r1', 'tool_result', undefined, {}, { defer: true });
    const second = track(cp.commitSoon());
    await flush();
    expect(store.checkpoints).toHaveLength(1);
    expect(second.done).toBe(false);
    // The deferred event waits with its checkpoint: it must not overtake the state it belongs to.
    expect(store.published).toHaveLength(0);
    state.step = 3;
    store.land(0);
    await flush();
    expect(second).toEqual({ done: true, error: undefined });
    // The second checkpoint writes the state as of its own start (after the first landed).
    expect(store.checkpoints.map((c) => c.step)).toEqual([1, 3]);
    expect(store.log).toEqual(['checkpoint step=1', 'publish 1', 'checkpoint step=3']);
    store.land(1);
    await cp.settle();
    expect(store.maxInFlight).toBe(1);
  });

  it('keeps concurrent commits (the loop and a drain on a mail hint) one at a time', async () => {
    const { store, cp } = setup();
    await cp.commitSoon();
    const a = track(cp.commit());
    const b = track(cp.commit());
    for (let i = 0; i < 3; i++) {
      await flush();
      expect(store.inFlight).toBe(1);
      store.land(i);
    }
    await flush();
    expect(store.checkpoints).toHaveLength(3);
    expect(store.maxInFlight).toBe(1);
    expect([a.done, a.error, b.done, b.error]).toEqual([true, undefined, true, undefined]);
  });

  it('commit waits for the events emitted before it, not only the checkpoint', async () => {
    const { store, cp } = setup();
    store.holdPublishes = true;
    cp.emit('r1', 'message', undefined);
    const committed = track(cp.commit());
    await flush();
    store.land(0);
    await flush();
    expect(committed.done).toBe(false);
    store.publishes[0]?.resolve();
    await flush();
    expect(committed).toEqual({ done: true, error: undefined });
  });

  it('surfaces a failed checkpoint at settle, and at every later settle and commit', async () => {
    const { store, cp } = setup();
    await cp.commitSoon();
    store.land(0, new Error('wrong last sequence'));
    await expect(cp.settle()).rejects.toThrow('wrong last sequence');
    await expect(cp.settle()).rejects.toThrow('wrong last sequence');
    await expect(cp.commit()).rejects.toThrow('wrong last sequence');
    // Nothing is written on top of a state whose write failed.
    expect(store.checkpoints).toHaveLength(1);
  });

  it('fails a checkpoint waiting behind one that fails, without starting it', async () => {
    const { store, cp } = setup();
    await cp.commitSoon();
    const second = track(cp.commitSoon());
    store.land(0, new Error('fenced'));
    await flush();
    expect(second.done).toBe(true);
    expect((second.error as Error).message).toBe('fenced');
    expect(store.checkpoints).toHaveLength(1);
  });

  it('surfaces a failed publish at the settle of the commit that carried it', async () => {
    const { store, cp } = setup();
    store.holdPublishes = true;
    cp.emit('r1', 'message', undefined);
    await cp.commitSoon();
    store.land(0);
    store.publishes[0]?.reject(new Error('stream unavailable'));
    await expect(cp.settle()).rejects.toThrow('stream unavailable');
  });

  it('settle with nothing in flight returns at once', async () => {
    const { store, cp } = setup();
    await cp.settle();
    expect(store.checkpoints).toHaveLength(0);
  });

  it('quiesce waits for the checkpoint in flight and ignores its failure', async () => {
    const { store, cp } = setup();
    await cp.commitSoon();
    const quiet = track(cp.quiesce());
    await flush();
    expect(quiet.done).toBe(false);
    store.land(0, new Error('boom'));
    await flush();
    expect(quiet).toEqual({ done: true, error: undefined });
    // quiesce forgets nothing: the failure is still the turn's.
    await expect(cp.settle()).rejects.toThrow('boom');
  });

  it('abandon forgets a failed attempt; deferred events go with the next commit', async () => {
    const { state, store, cp } = setup();
    store.holdPublishes = true;
    cp.emit('r1', 'message', undefined); // its publish fails with the attempt
    await cp.commitSoon();
    store.land(0, new Error('attempt failed'));
    store.publishes[0]?.reject(new Error('publish failed'));
    cp.emit('r1', 'tool_result', undefined, {}, { defer: true });
    await cp.abandon();
    store.holdPublishes = false;
    state.step = 9;
    const committed = track(cp.commit());
    await flush();
    store.land(1);
    await flush();
    expect(committed).toEqual({ done: true, error: undefined });
    expect(store.checkpoints.map((c) => c.step)).toEqual([0, 9]);
    expect(store.published.map((e) => e.seq)).toEqual([1, 2]);
  });
});
