import { errorCode, noopLogger, type TroupeError } from '@troupe/proto';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { z } from 'zod';
import { defineActor } from '../../src/actor-definition';
import { ActorSystem } from '../../src/actor-system';
import { placerStoppedError } from '../../src/internal/protocol';
import { NO_RESPONDERS } from '../../src/internal/requester';
import { PlacementService } from '../../src/placement-service';

// Placers run on the leading coordinator only: while the lease changes hands, no placer answers
// activation requests. An ask sent in that gap waits for the next leader instead of failing.

let server: NatsServerHandle;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});

const echo = defineActor({
  kind: 'echo',
  state: z.object({}),
  initialState: () => ({}),
  messages: { hit: z.object({}) },
  handlers: { hit: () => ({ reply: 'pong' }) },
  idleTimeoutMs: 60_000,
});

/** Takes 5 s to activate: longer than the 4 s of silence a requester watching a placer allows. */
const slow = defineActor({
  kind: 'slow',
  state: z.object({}),
  initialState: () => ({}),
  messages: { hit: z.object({}) },
  handlers: { hit: () => ({ reply: 'pong' }) },
  onActivate: async () => {
    await new Promise((resolve) => setTimeout(resolve, 5_000));
  },
  idleTimeoutMs: 60_000,
});

/**
 * A host (`host-a`, hosting `actor`), a client and a `base` system for a placer, on one new
 * cluster, each pushed to `systems` for the test to shut down.
 */
async function startSystems(
  actor: typeof echo | typeof slow,
  systems: ActorSystem[],
): Promise<{ host: ActorSystem; client: ActorSystem; base: ActorSystem; cluster: string }> {
  const cluster = randomClusterName();
  const start = async (options: Partial<Parameters<typeof ActorSystem.start>[0]>) => {
    const system = await ActorSystem.start({
      cluster,
      servers: server.url,
      placement: 'none',
      ...options,
    });
    systems.push(system);
    return system;
  };
  const host = await start({ hostId: 'host-a', hosting: [actor] });
  return { host, client: await start({}), base: await start({}), cluster };
}

function placerFor(base: ActorSystem, hostId: string): PlacementService {
  return new PlacementService({
    transport: base.transport,
    jsm: base.jsm,
    directory: base.directory,
    states: base.states,
    log: noopLogger,
    selectHost: async () => ({ hostId }),
    onPlacementFailed: () => {},
    sweepIntervalMs: 60_000,
  });
}

/** Resolves when `system`'s next activation request finds no placer. */
function nextPlacerGap(system: ActorSystem): Promise<void> {
  const requester = system.transport.requester;
  const original = requester.request.bind(requester);
  return new Promise((resolve) => {
    requester.request = async (subject, data, options) => {
      const reply = await original(subject, data, options);
      if (subject.endsWith('.sched.activate') && reply === NO_RESPONDERS) {
        requester.request = original;
        resolve();
      }
      return reply;
    };
  });
}

test('an ask sent while no placer runs is answered once one starts', async () => {
  const cluster = randomClusterName();
  const systems: ActorSystem[] = [];
  let placer: PlacementService | undefined;
  try {
    const host = await ActorSystem.start({
      cluster,
      servers: server.url,
      hostId: 'host-a',
      hosting: [echo],
      placement: 'none',
    });
    systems.push(host);
    const client = await ActorSystem.start({ cluster, servers: server.url, placement: 'none' });
    systems.push(client);
    const gap = nextPlacerGap(client);
    const asked = client.ref(echo, 'one').ask('hit', {}, { timeoutMs: 30_000 });
    await gap;
    // The new leader's placer comes up after the ask found none.
    const base = await ActorSystem.start({ cluster, servers: server.url, placement: 'none' });
    systems.push(base);
    placer = placerFor(base, 'host-a');
    await placer.start();
    await expect(asked).resolves.toBe('pong');
    expect(host.activationsStarted).toBe(1);
  } finally {
    await placer?.stop();
    for (const s of systems.reverse()) await s.shutdown({ graceMs: 200 });
  }
});

test('with no placer at all, an ask fails UNAVAILABLE naming the placement subject', async () => {
  const cluster = randomClusterName();
  const client = await ActorSystem.start({ cluster, servers: server.url, placement: 'none' });
  try {
    const started = Date.now();
    const err = await client
      .ref(echo, 'one')
      .ask('hit', {}, { timeoutMs: 1_500 })
      .catch((e: unknown) => e);
    expect(errorCode(err)).toBe('UNAVAILABLE');
    expect((err as Error).message).toContain(`no placement service answers on troupe.${cluster}`);
    // It waited for a placer up to the ask's deadline (shorter than the grace), not longer.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    expect(Date.now() - started).toBeLessThan(5_000);
  } finally {
    await client.shutdown({ graceMs: 200 });
  }
});

// A placer killed with an activation request (the leading coordinator, kill -9), or whose answer
// was lost to its NATS server's restart, held the requester until its deadline: a task waited
// 30 s to destroy a sandbox (chaos seed 8038). The requester now watches the placer and asks
// again when it falls silent.
test('an activation request a placer swallowed is asked again when the placer falls silent', async () => {
  const cluster = randomClusterName();
  const systems: ActorSystem[] = [];
  let placer: PlacementService | undefined;
  try {
    const host = await ActorSystem.start({
      cluster,
      servers: server.url,
      hostId: 'host-a',
      hosting: [echo],
      placement: 'none',
    });
    systems.push(host);
    const client = await ActorSystem.start({ cluster, servers: server.url, placement: 'none' });
    systems.push(client);
    const base = await ActorSystem.start({ cluster, servers: server.url, placement: 'none' });
    systems.push(base);
    // A placer that takes the request and dies with it: no answer, no sign of life.
    let swallowed = 0;
    let keepaliveAsked: string | undefined;
    const blackHole = base.nc.subscribe(`troupe.${cluster}.coord.sched.activate`, {
      queue: 'troupe-placer',
      callback: (_err, msg) => {
        swallowed++;
        keepaliveAsked = msg.headers?.get('Troupe-Keepalive');
        blackHole.unsubscribe();
        placer = placerFor(base, 'host-a');
        void placer.start();
      },
    });
    await base.nc.flush();
    const started = Date.now();
    const placed = await client.transport.activate(
      { kind: 'echo', id: 'one' },
      { timeoutMs: 25_000 },
    );
    const tookMs = Date.now() - started;
    process.stderr.write(`placed ${tookMs} ms after the request, the first one swallowed\n`);
    expect(swallowed).toBe(1);
    expect(keepaliveAsked).toBe('1000');
    expect(placed.hostId).toBe('host-a');
    // Four silent seconds, then the new placer's answer: well before the 25 s deadline.
    expect(tookMs).toBeGreaterThanOrEqual(3_500);
    expect(tookMs).toBeLessThan(12_000);
  } finally {
    await placer?.stop();
    for (const s of systems.reverse()) await s.shutdown({ graceMs: 200 });
  }
});

test('a placer working on a watched activation request sends signs of life until it answers', async () => {
  const cluster = randomClusterName();
  const systems: ActorSystem[] = [];
  let placer: PlacementService | undefined;
  try {
    const host = await ActorSystem.start({
      cluster,
      servers: server.url,
      hostId: 'host-a',
      hosting: [slow],
      placement: 'none',
    });
    systems.push(host);
    const base = await ActorSystem.start({ cluster, servers: server.url, placement: 'none' });
    systems.push(base);
    placer = placerFor(base, 'host-a');
    await placer.start();
    const client = await ActorSystem.start({ cluster, servers: server.url, placement: 'none' });
    systems.push(client);
    // The activation takes 5 s (its onActivate): more than the 4 s of silence a watching
    // requester tolerates, so only the placer's signs keep the one request alive.
    const sent: string[] = [];
    const request = client.transport.requester.request.bind(client.transport.requester);
    client.transport.requester.request = (subject, data, options) => {
      sent.push(subject);
      return request(subject, data, options);
    };
    const placed = await client.transport.activate(
      { kind: 'slow', id: 'one' },
      { timeoutMs: 20_000 },
    );
    expect(placed.hostId).toBe('host-a');
    expect(sent.filter((s) => s.endsWith('.sched.activate'))).toHaveLength(1);
    expect(host.activationsStarted).toBe(1);
  } finally {
    await placer?.stop();
    for (const s of systems.reverse()) await s.shutdown({ graceMs: 200 });
  }
});

// An ask that found no activation travels with its activation request. A placer killed holding
// it (the leading coordinator, kill -9) left the asker waiting to the ask's deadline: only the
// host that takes an ask over was watched, from its first sign (chaos seed 8237: a sandbox's
// create waited 120 s). The placer is now watched until the hand-over; a silent one fails the
// ask, retryable, without asking again (it may have handed the ask over before dying).
test('an ask whose placer dies before handing it over fails within seconds, not at its deadline', async () => {
  const systems: ActorSystem[] = [];
  try {
    const { host, client, base, cluster } = await startSystems(echo, systems);
    const swallowed: { keepalive?: string; withAsk: boolean }[] = [];
    base.nc.subscribe(`troupe.${cluster}.coord.sched.activate`, {
      queue: 'troupe-placer',
      callback: (_err, msg) => {
        const body = msg.json<{ ask?: unknown }>();
        swallowed.push({
          ...(msg.headers?.get('Troupe-Keepalive')
            ? { keepalive: msg.headers.get('Troupe-Keepalive') }
            : {}),
          withAsk: body.ask !== undefined,
        });
      },
    });
    await base.nc.flush();
    const started = Date.now();
    const err = await client
      .ref(echo, 'one')
      .ask('hit', {}, { timeoutMs: 60_000 })
      .catch((e: unknown) => e);
    const tookMs = Date.now() - started;
    expect(errorCode(err)).toBe('UNAVAILABLE');
    expect((err as TroupeError).details?.['placerSilent']).toBe(true);
    expect((err as TroupeError).retryable).toBe(true);
    expect((err as Error).message).toMatch(/placement service holding it showed no sign of life/);
    // Asked once, with the ask, and not again; four silent seconds, not the 60 s deadline.
    expect(swallowed).toEqual([{ keepalive: '1000', withAsk: true }]);
    expect(tookMs).toBeGreaterThanOrEqual(3_500);
    expect(tookMs).toBeLessThan(10_000);
    expect(host.activationsStarted).toBe(0);
  } finally {
    for (const s of systems.reverse()) await s.shutdown({ graceMs: 200 });
  }
});

test('an ask handed over to a host whose activation outlasts the placer watch is answered', async () => {
  const systems: ActorSystem[] = [];
  let placer: PlacementService | undefined;
  try {
    const { host, client, base } = await startSystems(slow, systems);
    placer = placerFor(base, 'host-a');
    await placer.start();
    // A short ask (not watched once with its host) and a long one (watched by the host's signs).
    for (const [id, timeoutMs] of [
      ['short', 20_000],
      ['long', 90_000],
    ] as const) {
      await expect(client.ref(slow, id).ask('hit', {}, { timeoutMs })).resolves.toBe('pong');
    }
    expect(host.activationsStarted).toBe(2);
  } finally {
    await placer?.stop();
    for (const s of systems.reverse()) await s.shutdown({ graceMs: 200 });
  }
});

// Chaos seed 9420: a coordinator stepping down after a stall stopped its placer with an ask's
// activation request in hand, and the request vanished (routed to the placer just before its
// unsubscribe, or refused as "coordinator stopping", which failed the ask): the task's attempt
// failed after 4 s of silence and ran again. A placer that stops before placing the actor refuses
// the request as stopped — no host has the ask — and the requester asks the next placer.
test('an ask whose placer stops before placing it is placed by the next placer', async () => {
  const systems: ActorSystem[] = [];
  let next: PlacementService | undefined;
  try {
    const { host, client, base } = await startSystems(echo, systems);
    // The first placer waits for a host (no slot free), as the leader's queue does, and lets the
    // waiting request go when its coordinator stops (see ClusterPlacement.stop).
    let waiting: ((err: unknown) => void) | undefined;
    const first = new PlacementService({
      transport: base.transport,
      jsm: base.jsm,
      directory: base.directory,
      states: base.states,
      log: noopLogger,
      selectHost: () =>
        new Promise((_resolve, reject) => {
          waiting = reject;
        }),
      onPlacementFailed: () => {},
      sweepIntervalMs: 60_000,
    });
    await first.start();
    const asked = client.ref(echo, 'stepped').ask('hit', {}, { timeoutMs: 30_000 });
    await waitFor(() => waiting, { timeoutMs: 10_000, message: 'the first placer waits' });
    const stopped = first.stop();
    waiting!(placerStoppedError('echo/stepped (coordinator stopping)'));
    await stopped;
    // The next leader's placer comes up a moment later.
    const other = await ActorSystem.start({
      cluster: base.transport.cluster,
      servers: server.url,
      placement: 'none',
    });
    systems.push(other);
    next = placerFor(other, 'host-a');
    await next.start();
    await expect(asked).resolves.toBe('pong');
    expect(host.activationsStarted).toBe(1);
  } finally {
    await next?.stop();
    for (const s of systems.reverse()) await s.shutdown({ graceMs: 200 });
  }
});
