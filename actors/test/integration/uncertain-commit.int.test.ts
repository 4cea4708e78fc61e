import { randomClusterName, startNatsServer, type NatsServerHandle } from '@troupe/testkit';
import { ErrorReason, hasReason } from '@troupe/proto';
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { defineActor } from '../../src/actor-definition';
import { isCommitFailed } from '../../src/actor-ref';
import { ActorSystem } from '../../src/actor-system';
import { StateStore, StoreUnavailableError } from '../../src/state-store';

// A turn's commit that fails without an answer from the store (a timeout in a partition, a NATS
// server lost) leaves the activation unsure of what the store holds. Chaos seed 8105: a sandbox
// actor checkpointed "command started" before running it, the turn's final commit timed out, the
// activation fell back to the state from before the turn (no command) and — cut off, then
// fenced by a newer activation it had not heard of — answered a `status` with that state. The
// task took "no command" for "never ran" and ran the command a second time.

let server: NatsServerHandle;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});
afterEach(() => {
  jest.restoreAllMocks();
});

const Steps = defineActor({
  kind: 'steps',
  state: z.object({ entries: z.array(z.string()) }),
  initialState: () => ({ entries: [] as string[] }),
  messages: {
    // Records `name` as started (checkpointed), then as done (the turn's commit).
    step: z.object({ name: z.string() }),
    read: z.object({}),
  },
  handlers: {
    step: async (ctx, msg, state) => {
      const started = [...state.entries, `${msg.name}:started`];
      await ctx.checkpoint({ entries: started });
      return { state: { entries: [...started, `${msg.name}:done`] }, reply: {} };
    },
    read: (ctx, _msg, state) => ({ reply: { entries: state.entries, epoch: ctx.epoch } }),
  },
  idleTimeoutMs: 600_000,
});

type ReadReply = { entries: string[]; epoch: number };

/**
 * Fails commits whose record contains `marker`, per `how` (`landed-unanswered`: written, then
 * failed as a timeout): only the next one, or with `always` every one until the mocks are
 * restored. Returns how many failed.
 */
function failCommitContaining(
  marker: string,
  how: 'lost' | 'landed-unanswered',
  times: 'once' | 'always' = 'once',
): () => number {
  const realCommit = StateStore.prototype.commitEncoded;
  let failed = 0;
  jest.spyOn(StateStore.prototype, 'commitEncoded').mockImplementation(async function (
    this: StateStore,
    ...args: Parameters<StateStore['commitEncoded']>
  ) {
    const text = Buffer.from(args[2]).toString();
    if ((times === 'always' || failed === 0) && text.includes(marker)) {
      failed++;
      if (how === 'landed-unanswered') await realCommit.apply(this, args);
      throw new StoreUnavailableError(new Error('TIMEOUT'));
    }
    return realCommit.apply(this, args);
  });
  return () => failed;
}

/** Fails every read of a state record (the store unreachable) until the returned call. */
function failReads(): () => void {
  const spy = jest
    .spyOn(StateStore.prototype, 'read')
    .mockRejectedValue(new StoreUnavailableError(new Error('TIMEOUT')));
  return () => spy.mockRestore();
}

async function withHost(run: (host: ActorSystem) => Promise<void>): Promise<void> {
  const host = await ActorSystem.start({
    cluster: randomClusterName(),
    servers: [server.url],
    hosting: [Steps],
  });
  try {
    await run(host);
  } finally {
    await host.shutdown({ graceMs: 0 });
  }
}

test('a failed commit falls back to the turn’s checkpoint, not to the state before the turn', async () => {
  await withHost(async (host) => {
    const ref = host.refOf({ kind: 'steps', id: 's1' });
    await ref.ask('read', {});
    // Lost at every try, for as long as the commit keeps trying (5 s).
    const failed = failCommitContaining('a:done', 'lost', 'always');
    const error: unknown = await ref.ask('step', { name: 'a' }, { timeoutMs: 10_000 }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toMatchObject({ message: expect.stringMatching(/state commit failed/) });
    // The asker is told its turn was rolled back, to ask an idempotent message again.
    expect(isCommitFailed(error)).toBe(true);
    // A store outage to the asker too: its own turn failing on it is retried, not dead-lettered.
    expect(hasReason(error, ErrorReason.STORE_UNAVAILABLE)).toBe(true);
    expect(failed()).toBeGreaterThan(1);
    jest.restoreAllMocks();
    const after = (await ref.ask('read', {})) as ReadReply;
    // The checkpoint is in the store: "a" started. The state before the turn said nothing of it.
    expect(after.entries).toEqual(['a:started']);
    const stored = await host.states.read({ kind: 'steps', id: 's1' });
    expect((stored?.record.data as { entries: string[] }).entries).toEqual(after.entries);
  });
});

test('a commit that landed unanswered is taken up, and the activation is not fenced by it', async () => {
  await withHost(async (host) => {
    const ref = host.refOf({ kind: 'steps', id: 's2' });
    const first = (await ref.ask('read', {})) as ReadReply;
    // Landed, and the store not readable for as long as the commit tries to find out.
    const failed = failCommitContaining('a:done', 'landed-unanswered');
    const restoreReads = failReads();
    await expect(ref.ask('step', { name: 'a' }, { timeoutMs: 10_000 })).rejects.toThrow(
      /state commit failed/,
    );
    restoreReads();
    expect(failed()).toBe(1);
    // What the store holds, from the same activation: settled before its next turn.
    const after = (await ref.ask('read', {})) as ReadReply;
    expect(after).toEqual({ entries: ['a:started', 'a:done'], epoch: first.epoch });
    // And it goes on committing: its revision is the store's again.
    await ref.ask('step', { name: 'b' });
    const last = (await ref.ask('read', {})) as ReadReply;
    expect(last).toEqual({
      entries: ['a:started', 'a:done', 'b:started', 'b:done'],
      epoch: first.epoch,
    });
  });
});

test('after a failed commit, an activation a newer epoch has claimed answers nothing from memory', async () => {
  await withHost(async (host) => {
    const addr = { kind: 'steps', id: 's3' };
    const ref = host.refOf(addr);
    const first = (await ref.ask('read', {})) as ReadReply;
    const failed = failCommitContaining('a:done', 'lost', 'always');
    await expect(ref.ask('step', { name: 'a' }, { timeoutMs: 10_000 })).rejects.toThrow(
      /state commit failed/,
    );
    expect(failed()).toBeGreaterThan(1);
    jest.restoreAllMocks();
    // A newer activation (elsewhere, while this one was cut off) claims the state and moves on.
    // (The directory hands out the epochs; the next activation it places gets at least this one.)
    const claimed = await host.states.claim(addr, first.epoch + 1);
    await host.states.commit(addr, claimed.revision, {
      epoch: first.epoch + 1,
      cursor: claimed.record?.cursor ?? 0,
      data: { entries: ['a:started', 'a:done', 'elsewhere'] },
    });
    // The old activation must not answer from memory: it finds itself fenced, and the ask is
    // answered by a newer activation from the store.
    const after = (await ref.ask('read', {}, { timeoutMs: 20_000 })) as ReadReply;
    expect(after.epoch).toBeGreaterThan(first.epoch);
    expect(after.entries).toEqual(['a:started', 'a:done', 'elsewhere']);
    expect((await host.states.read(addr))?.record.epoch).toBe(after.epoch);
  });
});

// A commit the store did not answer is found out and finished within its turn, where a turn
// failed after 5 s before (chaos seed 8436: a sandbox create committed while its node agent was
// cut off for 2 s failed its task's attempt; the retry ran 8 s after the partition healed).

test('a write lost without an answer is written again, and the turn succeeds', async () => {
  await withHost(async (host) => {
    const addr = { kind: 'steps', id: 's4' };
    const ref = host.refOf(addr);
    const first = (await ref.ask('read', {})) as ReadReply;
    const failed = failCommitContaining('a:done', 'lost');
    await ref.ask('step', { name: 'a' }, { timeoutMs: 10_000 });
    expect(failed()).toBe(1);
    expect((await host.states.read(addr))?.record.data).toEqual({
      entries: ['a:started', 'a:done'],
    });
    await ref.ask('step', { name: 'b' });
    expect(await ref.ask('read', {})).toEqual({
      entries: ['a:started', 'a:done', 'b:started', 'b:done'],
      epoch: first.epoch,
    });
  });
});

test('a write that landed without an answer is read back as the commit, not written twice', async () => {
  await withHost(async (host) => {
    const addr = { kind: 'steps', id: 's5' };
    const ref = host.refOf(addr);
    await ref.ask('step', { name: 'x' });
    const first = (await ref.ask('read', {})) as ReadReply;
    const failed = failCommitContaining('a:done', 'landed-unanswered');
    const before = (await host.states.read(addr))!.revision;
    await ref.ask('step', { name: 'a' }, { timeoutMs: 10_000 });
    expect(failed()).toBe(1);
    // The checkpoint and the landed write: nothing written a second time.
    const stored = (await host.states.read(addr))!;
    expect(stored.revision).toBe(before + 2);
    expect(stored.record.data).toEqual({ entries: ['x:started', 'x:done', 'a:started', 'a:done'] });
    await ref.ask('step', { name: 'b' });
    expect(await ref.ask('read', {})).toEqual({
      entries: ['x:started', 'x:done', 'a:started', 'a:done', 'b:started', 'b:done'],
      epoch: first.epoch,
    });
  });
});

test('a write another epoch overtook is fenced, not written again', async () => {
  await withHost(async (host) => {
    const addr = { kind: 'steps', id: 's6' };
    const ref = host.refOf(addr);
    const first = (await ref.ask('read', {})) as ReadReply;
    // The write is lost; before the activation reads, a newer one claims the state elsewhere.
    const realCommit = StateStore.prototype.commitEncoded;
    let lost = 0;
    jest.spyOn(StateStore.prototype, 'commitEncoded').mockImplementation(async function (
      this: StateStore,
      ...args: Parameters<StateStore['commitEncoded']>
    ) {
      if (lost === 0 && Buffer.from(args[2]).toString().includes('a:done')) {
        lost++;
        jest.restoreAllMocks();
        await host.states.claim(addr, first.epoch + 1);
        throw new StoreUnavailableError(new Error('TIMEOUT'));
      }
      return realCommit.apply(this, args);
    });
    // Fenced, the activation tells the asker the actor moved, and the newer one runs the ask.
    await ref.ask('step', { name: 'a' }, { timeoutMs: 20_000 });
    expect(lost).toBe(1);
    // Had the claim's write been taken for the lost one, the old activation would answer from
    // memory (its epoch, "a:done" once).
    const after = (await ref.ask('read', {}, { timeoutMs: 20_000 })) as ReadReply;
    expect(after.epoch).toBeGreaterThan(first.epoch);
    expect(after.entries).toEqual(['a:started', 'a:started', 'a:done']);
    const stored = (await host.states.read(addr))!;
    expect(stored.record.epoch).toBe(after.epoch);
    expect(stored.record.data).toEqual({ entries: after.entries });
  });
});

test('a read left unanswered while finding out a write is asked again within the commit', async () => {
  await withHost(async (host) => {
    const addr = { kind: 'steps', id: 's7' };
    const ref = host.refOf(addr);
    const first = (await ref.ask('read', {})) as ReadReply;
    const failed = failCommitContaining('a:done', 'landed-unanswered');
    // The first read after the unanswered write is answered only after 8 s (a silent replica).
    const realRead = StateStore.prototype.read;
    let reads = 0;
    jest.spyOn(StateStore.prototype, 'read').mockImplementation(async function (
      this: StateStore,
      ...args: Parameters<StateStore['read']>
    ) {
      reads++;
      if (reads === 1) await delay(8_000);
      return realRead.apply(this, args);
    });
    const started = Date.now();
    await ref.ask('step', { name: 'a' }, { timeoutMs: 10_000 });
    // Within the commit's 5 s patience: the hung read was given up, the next found the write.
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(failed()).toBe(1);
    expect(reads).toBe(2);
    jest.restoreAllMocks();
    const stored = (await host.states.read(addr))!;
    expect(stored.record.data).toEqual({ entries: ['a:started', 'a:done'] });
    expect(await ref.ask('read', {})).toEqual({
      entries: ['a:started', 'a:done'],
      epoch: first.epoch,
    });
  });
});
