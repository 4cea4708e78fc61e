import { startNatsServer, waitFor, type NatsServerHandle } from '@troupe/testkit';
import { TestCluster } from '@troupe/test-cluster';

// Chaos run 23 (seed 9304): a NATS server stopped for a moment, the leader declared every host
// dead and stepped down with placements waiting for a free slot. Its placer's stop waited for
// them, and they waited for their deadline (an ask's: 5 minutes): the coordinator, elected again
// a moment later, started its services 5 minutes later, and no actor was placed meanwhile. The
// placement lets its waiting requests go before the placer's stop waits for them.

let server: NatsServerHandle;
let c: TestCluster | undefined;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await c?.stop();
  await server.stop();
});

test('a leader stepping down with a placement waiting for a slot stops at once', async () => {
  c = await TestCluster.start({ nats: server, actors: true });
  const coordinator = c.coordinator;
  // A host of kind `w` without a free slot: a placement for it waits.
  await coordinator.registry!.register({
    hostId: 'full-host',
    incarnation: 'i1',
    kinds: ['w'],
    slots: { w: 0 },
    cpu: 1,
    memMb: 1,
    backends: [],
    labels: {},
  });
  const asked = c.actors
    .refOf({ kind: 'w', id: 'waits' })
    .ask('ping', {}, { timeoutMs: 300_000 })
    .then(
      () => 'answered',
      (err: unknown) => err,
    );
  await waitFor(() => (coordinator.placement?.queueDepth()['w'] ?? 0) === 1, {
    timeoutMs: 10_000,
    message: 'the placement waits for a slot',
  });

  const started = Date.now();
  await c.stopCoordinator(coordinator);
  // Before: the stop waited for the placement's deadline (300 s).
  expect(Date.now() - started).toBeLessThan(15_000);
  // The ask is not answered by a host (none has the slot); it fails rather than hangs.
  const outcome = await asked;
  expect(outcome).not.toBe('answered');
  expect(outcome).toBeInstanceOf(Error);
});
