import { ActorSystem, PlacementService } from '@troupe/actors';
import { TroupeError } from '@troupe/proto';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { Coordinator } from '../../src/coordinator';
import { DriverRegistry } from '../../src/jobs/driver-registry';
import { HostRegistry } from '../../src/host-registry';
import { Tally } from './helpers';

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

// A leader's services start on streams that may be electing leaders of their own after a NATS
// server loss, and a start then times out (coordinator-replicas.int.test.ts, seen in CI). The
// leader that gave up after that one failure kept its lease with no placer running: a post to a
// sleeping actor was never delivered.
test('a leader whose services fail to start retries until they run, stopping the half-started', async () => {
  const realStart = PlacementService.prototype.start;
  let failures = 0;
  jest.spyOn(PlacementService.prototype, 'start').mockImplementation(async function (
    this: PlacementService,
  ) {
    if (failures < 2) {
      failures++;
      // As a start cut short by a stream without a leader fails: after its subscription.
      await realStart.call(this);
      throw new TroupeError('UNAVAILABLE', 'timeout');
    }
    return realStart.call(this);
  });
  const registryStops = jest.spyOn(HostRegistry.prototype, 'stop');
  const placerStops = jest.spyOn(PlacementService.prototype, 'stop');

  const cluster = randomClusterName();
  const coordinator = await Coordinator.start(
    {
      cluster,
      nats: { servers: [server.url] },
      heartbeatMs: 250,
      sweepIntervalMs: 500,
      metrics: { port: null },
    },
    { drivers: new DriverRegistry() },
  );
  const host = await ActorSystem.start({
    cluster,
    servers: [server.url],
    hostId: 'h1',
    hosting: [Tally],
    placement: 'none',
  });
  const client = await ActorSystem.start({ cluster, servers: [server.url] });
  try {
    await waitFor(() => coordinator.registry?.isAlive('h1'), {
      timeoutMs: 15_000,
      message: "the leader's services running after two failed starts",
    });
    expect(failures).toBe(2);
    // Each failed attempt stopped what it had built: no second placer answers activations.
    expect(registryStops).toHaveBeenCalledTimes(2);
    expect(placerStops).toHaveBeenCalledTimes(2);

    // The running placer wakes a sleeping actor for a post.
    await client.refOf({ kind: 'tally', id: 't1' }).post('add', { entry: 'a' });
    await waitFor(
      async () =>
        (
          (await client.states.read({ kind: 'tally', id: 't1' }))?.record.data as
            { entries: string[] } | undefined
        )?.entries.length === 1,
      { timeoutMs: 15_000, message: 'the post delivered' },
    );
    expect(coordinator.isLeader).toBe(true);
  } finally {
    await client.shutdown();
    await host.shutdown({ graceMs: 0 });
    await coordinator.stop();
  }
});
