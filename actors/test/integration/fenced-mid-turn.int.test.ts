import { connect } from '@nats-io/transport-node';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { actorSubject } from '@troupe/proto';
import { z } from 'zod';
import { defineActor } from '../../src/actor-definition';
import { ActorSystem } from '../../src/actor-system';
import { moveActivation } from '../fixtures/move-activation';

// An activation fenced while a turn runs (its host declared dead and the actor moved, or a newer
// activation started) aborts the turn's signal. Its asks used to be answered with the handler's
// failure, CANCELLED "fenced by a newer activation": the asker took its own call as failed. Chaos
// seed 9035: a task waiting on its command in a sandbox fenced that way failed its attempt. As for
// a fenced commit, the asks are now told the actor moved, and the askers retry on the new
// activation.

let server: NatsServerHandle;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});

/** Turns that wait for their signal's abort, while `holding` (the first activation's). */
let holding = true;
let held = 0;

const Waiter = defineActor({
  kind: 'waiter',
  state: z.object({ n: z.number().int() }),
  initialState: () => ({ n: 0 }),
  messages: { wait: z.object({}), bump: z.object({}) },
  handlers: {
    wait: async (ctx) => {
      if (holding) {
        held++;
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
        ctx.signal.throwIfAborted();
      }
      return { reply: { epoch: ctx.epoch } };
    },
    bump: (_ctx, _msg, state) => ({ state: { n: state.n + 1 }, reply: state.n + 1 }),
  },
  idleTimeoutMs: 600_000,
});

test('asks of a turn fenced mid-way are answered on the new activation, not failed', async () => {
  const cluster = randomClusterName();
  const system = await ActorSystem.start({
    cluster,
    servers: server.url,
    hostId: 'fenced-host',
    hosting: [Waiter],
  });
  const nc = await connect({ servers: server.url });
  try {
    const ref = system.ref(Waiter, 'w');
    expect(await ref.ask('bump', {})).toBe(1);
    // Two asks in one batch: one holding its turn, one queued behind it (and one more round of
    // the same ask id would join it).
    const waiting = ref.ask('wait', {}, { timeoutMs: 20_000 });
    await waitFor(() => held === 1, { timeoutMs: 5_000, message: 'the wait turn did not start' });
    const queued = ref.ask('bump', {}, { timeoutMs: 20_000 });
    // The actor moves to epoch 2 (on the same host, as after a host re-registers): the running
    // activation is fenced by the newer one's start.
    holding = false;
    const started = Date.now();
    expect(await moveActivation(system, nc, cluster, ref.address, 'fenced-host')).toBe(2);
    // Before: the wait rejected with CANCELLED "… was fenced by a newer activation".
    await expect(waiting).resolves.toEqual({ epoch: 2 });
    // The queued bump ran once, on the new activation, over the state epoch 1 committed.
    await expect(queued).resolves.toBe(2);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(held).toBe(1);
    expect(await ref.ask('bump', {})).toBe(3);
  } finally {
    await nc.close();
    await system.shutdown({ graceMs: 500 });
  }
});

// The same for a host that shuts down with a turn still running past its grace: the turn's signal
// is aborted ("host shutting down"), and its asks used to be answered with the handler's
// CANCELLED. They are told the actor moved, and run on the next activation, on another host.
test("asks of a turn cut off by its host's shutdown run on the next activation", async () => {
  const cluster = randomClusterName();
  const start = (hostId: string) =>
    ActorSystem.start({ cluster, servers: server.url, hostId, hosting: [Waiter] });
  const a = await start('stopping-host');
  let b: ActorSystem | undefined;
  try {
    expect(await a.ref(Waiter, 'w2').ask('bump', {})).toBe(1); // activated on the only host
    b = await start('other-host');
    holding = true;
    held = 0;
    const ref = b.ref(Waiter, 'w2');
    const waiting = ref.ask('wait', {}, { timeoutMs: 20_000 });
    await waitFor(() => held === 1, { timeoutMs: 5_000, message: 'the wait turn did not start' });
    const queued = ref.ask('bump', {}, { timeoutMs: 20_000 });
    holding = false;
    const started = Date.now();
    // The grace ends with the wait still running: its turn is aborted.
    await a.shutdown({ graceMs: 300 });
    // Before: the wait rejected with CANCELLED "host shutting down".
    await expect(waiting).resolves.toEqual({ epoch: 2 });
    await expect(queued).resolves.toBe(2);
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(held).toBe(1);
    expect(b.activationsStarted).toBe(1);
  } finally {
    await a.shutdown({ graceMs: 100 }).catch(() => undefined);
    await b?.shutdown({ graceMs: 500 });
  }
});

// Chaos seed 9420 (replayed with the asks logged): a node agent declared dead fenced its
// activations the moment a task's next `wait` to one of them was on its way. The server had
// routed the request to the fenced activation's subscription before it saw the unsubscribe, the
// client dropped it, and the task heard nothing: its attempt failed on the 4 s silence. A fenced
// activation drains its subscription, as a passivating one does: what was already routed to it
// is told the actor moved.
test('an ask routed to an activation as it is fenced is told the actor moved, not dropped', async () => {
  const cluster = randomClusterName();
  const system = await ActorSystem.start({
    cluster,
    servers: server.url,
    hostId: 'fence-race-host',
    hosting: [Waiter],
  });
  try {
    holding = false;
    const ref = system.ref(Waiter, 'w3');
    expect(await ref.ask('bump', {})).toBe(1);
    // The coordinator's word that the host is dead, and the ask, travel on one connection in
    // this order: the ask is routed to the activation's subscription before its unsubscribe.
    const host = (system as unknown as { host: { fenceAll(reason: string): void } }).host;
    const trigger = `test.${cluster}.fence`;
    system.nc.subscribe(trigger, { callback: () => host.fenceAll('declared dead (test)') });
    await system.nc.flush();
    system.nc.publish(trigger);
    const started = Date.now();
    // Watched at 250 ms: a dropped ask fails after 1 s of silence.
    const next = ref.ask('bump', {}, { timeoutMs: 20_000, livenessMs: 250 });
    // Before: UNAVAILABLE "its host showed no sign of life for 1000 ms".
    await expect(next).resolves.toBe(2);
    expect(Date.now() - started).toBeLessThan(5_000);
  } finally {
    await system.shutdown({ graceMs: 500 });
  }
});

// Chaos seed 45007: a node agent, stopped for a second, was declared dead just as a placer's
// request started an activation on it. Fenced before it had subscribed, the activation went on
// starting and subscribed anyway, then stayed subscribed for good: it answered every ask at once
// "is passivating", ahead of the live activation, so no ask of that sandbox was answered for
// 80 s, and its task failed all its attempts.
test('an activation fenced while it starts never subscribes: asks reach the next one', async () => {
  const cluster = randomClusterName();
  const system = await ActorSystem.start({
    cluster,
    servers: server.url,
    hostId: 'fence-start-host',
    hosting: [Waiter],
  });
  try {
    holding = false;
    const addr = { kind: 'waiter', id: 'w4' };
    const host = system.localHost!;
    // In one tick: the activation's start waits on its state claim when the fence comes.
    const starting = host.activate(addr, 1, {});
    (host as unknown as { fenceAll(reason: string): void }).fenceAll('declared dead (test)');
    await expect(starting).rejects.toThrow(/fenced/);
    // Nothing answers at the actor's subject.
    await expect(
      system.nc.request(actorSubject(cluster, addr), new Uint8Array(), { timeout: 2_000 }),
    ).rejects.toThrow(/no responders/i);
    // An ask is answered by a new activation.
    const ref = system.ref(Waiter, 'w4');
    await expect(ref.ask('bump', {}, { timeoutMs: 10_000 })).resolves.toBe(1);
  } finally {
    await system.shutdown({ graceMs: 500 });
  }
});
