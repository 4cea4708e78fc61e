import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { z } from 'zod';
import { defineActor } from '../../src/actor-definition';
import { ActorSystem } from '../../src/actor-system';
import { StateStore, StoreUnavailableError } from '../../src/state-store';

// An activation whose turn cannot commit (the state bucket's stream electing a leader after a
// NATS server loss) retries its mailbox after a pause that grows while the outage lasts. With
// pauses doubling to 5 s, a message waited up to 5 s more after the stream was back (a 4 s
// outage: retries at 0, 0.25, 0.75, 1.75, 3.75 and then 7.75 s), most of a recovery's time
// in the chaos runs; the pause now stops growing at 1 s.

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

const Log = defineActor({
  kind: 'log',
  state: z.object({ entries: z.array(z.string()) }),
  initialState: () => ({ entries: [] as string[] }),
  messages: { add: z.object({ entry: z.string() }) },
  handlers: { add: (_ctx, msg, state) => ({ state: { entries: [...state.entries, msg.entry] } }) },
  idleTimeoutMs: 600_000,
});

test('a message whose commit met a 4 s store outage is applied within about 1 s of its end', async () => {
  const cluster = randomClusterName();
  const host = await ActorSystem.start({ cluster, servers: [server.url], hosting: [Log] });
  try {
    const ref = host.refOf({ kind: 'log', id: 'l1' });
    const entries = async (): Promise<string[]> =>
      (
        (await host.states.read({ kind: 'log', id: 'l1' }))?.record.data as
          { entries: string[] } | undefined
      )?.entries ?? [];
    await ref.post('add', { entry: 'before' });
    await waitFor(async () => (await entries()).length === 1, { timeoutMs: 10_000 });

    const realCommit = StateStore.prototype.commitEncoded;
    let outageEndsAt = Number.POSITIVE_INFINITY;
    let refused = 0;
    jest.spyOn(StateStore.prototype, 'commitEncoded').mockImplementation(async function (
      this: StateStore,
      ...args: Parameters<StateStore['commitEncoded']>
    ) {
      if (Date.now() < outageEndsAt) {
        refused++;
        throw new StoreUnavailableError(new Error('no responders'));
      }
      return realCommit.apply(this, args);
    });
    outageEndsAt = Date.now() + 4_000;
    await ref.post('add', { entry: 'during' });
    await waitFor(async () => (await entries()).length === 2, {
      timeoutMs: 20_000,
      message: 'the message applied after the outage',
    });
    const lagMs = Date.now() - outageEndsAt;
    process.stderr.write(
      `applied ${lagMs} ms after the outage ended, ${refused} commits refused\n`,
    );
    expect(await entries()).toEqual(['before', 'during']);
    expect(refused).toBeGreaterThanOrEqual(4);
    expect(lagMs).toBeLessThan(2_500);
  } finally {
    await host.shutdown({ graceMs: 0 });
  }
});
