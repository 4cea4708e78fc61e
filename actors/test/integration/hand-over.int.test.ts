import { connect, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { decodeErrorHeaders, hostSubject, noopLogger } from '@troupe/proto';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { z } from 'zod';
import { defineActor } from '../../src/actor-definition';
import { ActorSystem } from '../../src/actor-system';
import { PlacementService, type PlacementTarget } from '../../src/placement-service';

// The race of issue 22 (at-most-once hand-over): the placer hands an ask to a host with the
// activation request, the host does not answer in time, and the placer retries elsewhere. The
// host that took the ask must be the only one to run it.

/** The placer's wait for a host's answer to an activation request. */
const ACTIVATION_TIMEOUT_MS = 1_000;

let server: NatsServerHandle;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});

/** A `handover` actor whose `hit` records which host ran it; `onActivate` may wait on a gate. */
function handoverActor(host: string, runs: string[], gate?: Promise<void>) {
  return defineActor({
    kind: 'handover',
    state: z.object({}),
    initialState: () => ({}),
    messages: { hit: z.object({}) },
    handlers: {
      hit: () => {
        runs.push(host);
        return { reply: host };
      },
    },
    ...(gate ? { onActivate: async () => void (await gate) } : {}),
    idleTimeoutMs: 60_000,
  });
}

interface Rig {
  cluster: string;
  systems: ActorSystem[];
  placer: PlacementService;
  nc: NatsConnection;
  /** Hosts the placer chose, in order. */
  chosen: string[];
}

async function rig(
  cluster: string,
  hosts: ActorSystem[],
  choose: (call: number) => Promise<PlacementTarget>,
  onFailed: () => void = () => {},
): Promise<Rig> {
  const base = await ActorSystem.start({ cluster, servers: server.url, placement: 'none' });
  const chosen: string[] = [];
  const placer = new PlacementService({
    transport: base.transport,
    jsm: base.jsm,
    directory: base.directory,
    states: base.states,
    log: noopLogger,
    selectHost: async () => {
      const target = await choose(chosen.length);
      chosen.push(target.hostId);
      return target;
    },
    onPlacementFailed: onFailed,
    activationTimeoutMs: ACTIVATION_TIMEOUT_MS,
    sweepIntervalMs: 60_000,
  });
  await placer.start();
  const nc = await connect({ servers: server.url });
  return { cluster, systems: [base, ...hosts], placer, nc, chosen };
}

async function teardown(r: Rig | undefined): Promise<void> {
  if (!r) return;
  await r.placer.stop();
  await r.nc.close();
  for (const s of r.systems) await s.shutdown({ graceMs: 200 });
}

test('a host that claimed the actor but answered the placer late runs the handed-over ask; nobody else does', async () => {
  const cluster = randomClusterName();
  const runs: string[] = [];
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let r: Rig | undefined;
  try {
    const slow = await ActorSystem.start({
      cluster,
      servers: server.url,
      hostId: 'host-slow',
      hosting: [handoverActor('slow', runs, gate)],
      placement: 'none',
    });
    const fast = await ActorSystem.start({
      cluster,
      servers: server.url,
      hostId: 'host-fast',
      hosting: [handoverActor('fast', runs)],
      placement: 'none',
    });
    // The slow host claims the entry, then sits in onActivate past the placer's timeout; the
    // gate opens once the placer has given up on its answer.
    r = await rig(
      cluster,
      [slow, fast],
      async (call) => ({ hostId: call === 0 ? 'host-slow' : 'host-fast' }),
      () => open(),
    );
    const client = await ActorSystem.start({ cluster, servers: server.url, placement: 'none' });
    r.systems.push(client);
    const ref = client.ref(handoverActor('client', []), 'one');
    const reply = await ref.ask('hit', {}, { timeoutMs: 30_000 });

    expect(reply).toBe('slow');
    expect(r.chosen).toEqual(['host-slow']);
    // Nothing else is in flight: a second run would come from a second placement.
    await r.placer.stop();
    expect(runs).toEqual(['slow']);
    expect(fast.activationsStarted).toBe(0);
  } finally {
    open?.();
    await teardown(r);
  }
});

test('an activation request the host never answered is fenced before the ask goes elsewhere', async () => {
  const cluster = randomClusterName();
  const runs: string[] = [];
  let r: Rig | undefined;
  const captured: Msg[] = [];
  let lateAnswer: ReturnType<typeof decodeErrorHeaders>;
  try {
    const late = await ActorSystem.start({
      cluster,
      servers: server.url,
      hostId: 'host-late',
      hosting: [handoverActor('late', runs)],
      placement: 'none',
    });
    const fast = await ActorSystem.start({
      cluster,
      servers: server.url,
      hostId: 'host-fast',
      hosting: [handoverActor('fast', runs)],
      placement: 'none',
    });
    r = await rig(cluster, [late, fast], async (call) => {
      if (call === 1) {
        // The delayed request reaches the late host only now, after the placer gave up on it
        // and before the ask goes elsewhere: the late host must not be able to claim.
        const reply = await r!.nc.request(
          hostSubject(cluster, 'host-late', 'activate'),
          captured[0]!.data,
          { timeout: 10_000 },
        );
        lateAnswer = decodeErrorHeaders(reply.headers);
      }
      return { hostId: call === 0 ? 'host-ghost' : 'host-fast' };
    });
    // host-ghost takes activation requests and never answers (a host stalled or partitioned).
    r.nc.subscribe(hostSubject(cluster, 'host-ghost', 'activate'), {
      callback: (_err, msg) => void captured.push(msg),
    });
    await r.nc.flush();
    const client = await ActorSystem.start({ cluster, servers: server.url, placement: 'none' });
    r.systems.push(client);
    const ref = client.ref(handoverActor('client', []), 'two');

    expect(await ref.ask('hit', {}, { timeoutMs: 30_000 })).toBe('fast');
    expect(r.chosen).toEqual(['host-ghost', 'host-fast']);
    expect(captured).toHaveLength(1);
    expect(lateAnswer?.details?.['raced']).toBe(true);
    await waitFor(() => runs.length >= 1, { timeoutMs: 5_000, message: 'the ask ran' });
    expect(runs).toEqual(['fast']);
    expect(late.activationsStarted).toBe(0);
  } finally {
    await teardown(r);
  }
});
