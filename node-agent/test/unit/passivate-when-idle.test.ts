import { noopLogger, TroupeError, type ActorAddress } from '@troupe/proto';
import { waitFor } from '@troupe/testkit';
import { PASSIVATE_QUIET_MS, passivateWhenIdle } from '../../src/internal/actor-support';

// A sandbox with no container (lost, destroyed) passivates to give its slot back, but not at once
// after each turn: two callers asking it in turn each found the other's activation passivating
// (chaos seeds 8328, 8500, 8508), and neither was answered for tens of seconds.

const self: ActorAddress = { kind: 'sandbox', id: 'sb-1' };

function setUp(live: Set<string>) {
  const passivated: { epoch: number; atMs: number }[] = [];
  const guarded = passivateWhenIdle(
    live,
    (_addr, epoch) => {
      passivated.push({ epoch, atMs: Date.now() });
      return Promise.resolve();
    },
    noopLogger,
  );
  const turn = guarded(
    async (_ctx: { self: ActorAddress; epoch: number }, msg: string, _state: unknown) => msg,
  );
  return { passivated, turn, guarded };
}

test('passivates once, a quiet period after the last of turns that follow each other', async () => {
  const { passivated, turn } = setUp(new Set());
  const started = Date.now();
  for (let i = 0; i < 4; i++) {
    expect(await turn({ self, epoch: 3 }, `ask ${i}`, {})).toBe(`ask ${i}`);
    await new Promise((r) => setTimeout(r, PASSIVATE_QUIET_MS / 4));
    // Turns closer together than the quiet period keep the activation.
    expect(passivated).toEqual([]);
  }
  const lastTurnAt = Date.now();
  await waitFor(() => passivated.length > 0, { timeoutMs: 5_000, message: 'passivated' });
  expect(passivated).toEqual([{ epoch: 3, atMs: expect.any(Number) }]);
  expect(passivated[0]!.atMs - lastTurnAt).toBeGreaterThanOrEqual(PASSIVATE_QUIET_MS * 0.7);
  expect(passivated[0]!.atMs - started).toBeGreaterThanOrEqual(PASSIVATE_QUIET_MS);
  await new Promise((r) => setTimeout(r, PASSIVATE_QUIET_MS * 2));
  expect(passivated).toHaveLength(1);
});

test('an activation that holds its resource after the turn is not passivated', async () => {
  const live = new Set<string>();
  const { passivated, turn } = setUp(live);
  await turn({ self, epoch: 1 }, 'status', {});
  live.add(self.id); // a create made it live within the quiet period
  await turn({ self, epoch: 1 }, 'create', {});
  await new Promise((r) => setTimeout(r, PASSIVATE_QUIET_MS * 2));
  expect(passivated).toEqual([]);
});

test('a passivation that fails (a NATS outage) is tried again', async () => {
  // Chaos seed 8636: given up at the first timeout, five activations kept their slots until
  // their idle timeout, and the job's retries found no slot to read a sandbox in.
  const calls: number[] = [];
  const guarded = passivateWhenIdle(
    new Set(),
    (_addr, epoch) => {
      calls.push(epoch);
      return calls.length < 3
        ? Promise.reject(new TroupeError('UNAVAILABLE', 'directory read: timeout'))
        : Promise.resolve();
    },
    noopLogger,
  );
  await guarded(async () => 'ok')({ self, epoch: 7 }, 'status', {});
  await waitFor(() => calls.length === 3, {
    timeoutMs: 10_000,
    message: 'the passivation tried again until it succeeded',
  });
  expect(calls).toEqual([7, 7, 7]);
});

test('a turn that let its resource go passivates as soon as it is over', async () => {
  // A sandbox whose destroy removed its own container kept its slot for the quiet period after
  // every task: with 4 slots and ~80 ms tasks, a node agent ran 6 tasks a second.
  const live = new Set<string>([self.id]);
  const { passivated, turn: status, guarded } = setUp(live);
  const destroy = guarded(async (ctx: { self: ActorAddress; epoch: number }) => {
    live.delete(ctx.self.id);
    guarded.promptly(ctx);
    return 'destroyed';
  });
  const endedAt = Date.now();
  expect(await destroy({ self, epoch: 4 }, 'destroy', {})).toBe('destroyed');
  await waitFor(() => passivated.length > 0, { timeoutMs: 5_000, message: 'passivated' });
  expect(passivated).toEqual([{ epoch: 4, atMs: expect.any(Number) }]);
  expect(passivated[0]!.atMs - endedAt).toBeLessThan(PASSIVATE_QUIET_MS / 2);
  // The next activation, woken to answer about the destroyed sandbox, keeps the quiet period.
  const askedAt = Date.now();
  await status({ self, epoch: 5 }, 'status', {});
  await waitFor(() => passivated.length > 1, { timeoutMs: 5_000, message: 'passivated again' });
  expect(passivated[1]!.epoch).toBe(5);
  expect(passivated[1]!.atMs - askedAt).toBeGreaterThanOrEqual(PASSIVATE_QUIET_MS * 0.7);
});
