import { connect, type NatsConnection } from '@nats-io/transport-node';
import { errorCode, noopLogger, TroupeError } from '@troupe/proto';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { z } from 'zod';
import { defineActor } from '../../src/actor-definition';
import { ActorSystem } from '../../src/actor-system';
import { PlacementService } from '../../src/placement-service';
import { WORKING_HEADER } from '../../src/internal/ask-keepalive';

// A long ask in flight to a host that dies must fail soon after the host falls silent, not at
// its own deadline (minutes for a sandbox's creation); while the host lives and works, the ask
// must wait as long as the work takes.

/** Fast signs of life: asks of 2.4 s and more are watched; silence of 0.8 s fails them. */
const KEEPALIVE_MS = 200;
const LONG_TIMEOUT_MS = 60_000;

let server: NatsServerHandle;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});

/** A `worker` actor: `ping` answers at once; `work` answers when the test opens `gate`. */
function workerActor(gate: Promise<void>, started: () => void) {
  return defineActor({
    kind: 'worker',
    state: z.object({}),
    initialState: () => ({}),
    messages: { ping: z.object({}), work: z.object({}) },
    handlers: {
      ping: () => ({ reply: 'pong' }),
      work: async () => {
        started();
        await gate;
        return { reply: 'done' };
      },
    },
    idleTimeoutMs: 60_000,
  });
}

interface Rig {
  systems: ActorSystem[];
  host: ActorSystem;
  hostConnection: NatsConnection;
  client: ActorSystem;
  placer: PlacementService;
  /** Signs of life seen on any inbox. */
  signs: () => number;
  watcher: NatsConnection;
}

async function rig(
  gate: Promise<void>,
  started: () => void,
  /** 0: the cluster default. */
  askKeepaliveMs = KEEPALIVE_MS,
): Promise<Rig> {
  const cluster = randomClusterName();
  const base = await ActorSystem.start({ cluster, servers: server.url, placement: 'none' });
  const placer = new PlacementService({
    transport: base.transport,
    jsm: base.jsm,
    directory: base.directory,
    states: base.states,
    log: noopLogger,
    selectHost: async () => ({ hostId: 'host-worker' }),
    onPlacementFailed: () => {},
    activationTimeoutMs: 10_000,
    sweepIntervalMs: 60_000,
  });
  await placer.start();
  // The host gets a connection of its own, so the test can take it away as a crash would.
  const hostConnection = await connect({ servers: server.url });
  const host = await ActorSystem.start({
    cluster,
    connection: hostConnection,
    hostId: 'host-worker',
    hosting: [workerActor(gate, started)],
    placement: 'none',
    ...(askKeepaliveMs ? { askKeepaliveMs } : {}),
  });
  const client = await ActorSystem.start({
    cluster,
    servers: server.url,
    placement: 'none',
    ...(askKeepaliveMs ? { askKeepaliveMs } : {}),
  });
  const watcher = await connect({ servers: server.url });
  let signs = 0;
  watcher.subscribe('_INBOX.>', {
    callback: (_err, msg) => {
      if (msg.headers?.get(WORKING_HEADER)) signs++;
    },
  });
  await watcher.flush();
  return {
    systems: [client, host, base],
    host,
    hostConnection,
    client,
    placer,
    signs: () => signs,
    watcher,
  };
}

async function teardown(r: Rig | undefined): Promise<void> {
  if (!r) return;
  await r.placer.stop();
  await r.watcher.close();
  for (const s of r.systems) await s.shutdown({ graceMs: 200 }).catch(() => undefined);
  if (!r.hostConnection.isClosed()) await r.hostConnection.close();
}

function gated(): { gate: Promise<void>; open: () => void } {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  return { gate, open };
}

test('a long ask waits as long as its live host works, hearing from it meanwhile', async () => {
  const { gate, open } = gated();
  let r: Rig | undefined;
  try {
    r = await rig(gate, () => {});
    const ref = r.client.ref(
      workerActor(gate, () => {}),
      'w1',
    );
    expect(await ref.ask('ping', {}, { timeoutMs: 30_000 })).toBe('pong');
    const reply = ref.ask('work', {}, { timeoutMs: LONG_TIMEOUT_MS });
    // Six signs take over a second: longer than the 0.8 s of silence that would fail the ask.
    const rig_ = r;
    await waitFor(() => rig_.signs() >= 6, { timeoutMs: 30_000, message: 'six signs of life' });
    open();
    expect(await reply).toBe('done');
    expect(r.host.transport.keepalive.size).toBe(0);
  } finally {
    open();
    await teardown(r);
  }
});

test('a long ask fails UNAVAILABLE soon after its host falls silent mid-turn', async () => {
  const { gate, open } = gated();
  let startedWork!: () => void;
  const working = new Promise<void>((resolve) => (startedWork = resolve));
  let r: Rig | undefined;
  try {
    r = await rig(gate, () => startedWork());
    const ref = r.client.ref(
      workerActor(gate, () => {}),
      'w2',
    );
    expect(await ref.ask('ping', {}, { timeoutMs: 30_000 })).toBe('pong');
    const outcome = ref.ask('work', {}, { timeoutMs: LONG_TIMEOUT_MS }).then(
      () => undefined,
      (err: unknown) => err,
    );
    await working;
    // The host's process goes away as a crash would: no goodbye, no answer.
    const lostAt = Date.now();
    await r.hostConnection.close();
    const err = await outcome;
    const waitedMs = Date.now() - lostAt;

    expect(err).toBeInstanceOf(TroupeError);
    expect(errorCode(err)).toBe('UNAVAILABLE');
    expect((err as TroupeError).details?.['hostSilent']).toBe(true);
    expect((err as Error).message).toMatch(
      /ask work to worker\/w2: its host showed no sign of life/,
    );
    // Four silent intervals (0.8 s) plus scheduling: far from the 60 s deadline.
    expect(waitedMs).toBeLessThan(LONG_TIMEOUT_MS / 4);
  } finally {
    open();
    await teardown(r);
  }
});

test('an ask handed over with the activation is watched from the host that took it', async () => {
  const { gate, open } = gated();
  let startedWork!: () => void;
  const working = new Promise<void>((resolve) => (startedWork = resolve));
  let r: Rig | undefined;
  try {
    r = await rig(gate, () => startedWork());
    // No ping first: the actor sleeps, so the ask travels with the activation request.
    const ref = r.client.ref(
      workerActor(gate, () => {}),
      'w3',
    );
    const outcome = ref.ask('work', {}, { timeoutMs: LONG_TIMEOUT_MS }).then(
      () => undefined,
      (err: unknown) => err,
    );
    await working;
    const rig_ = r;
    await waitFor(() => rig_.signs() >= 1, { timeoutMs: 30_000, message: 'a first sign' });
    const lostAt = Date.now();
    await r.hostConnection.close();
    const err = await outcome;

    expect(errorCode(err)).toBe('UNAVAILABLE');
    expect((err as TroupeError).details?.['hostSilent']).toBe(true);
    expect(Date.now() - lostAt).toBeLessThan(LONG_TIMEOUT_MS / 4);
  } finally {
    open();
    await teardown(r);
  }
});

test('an ask handed to a host that falls silent before its first sign fails soon', async () => {
  const { gate, open } = gated();
  let startedWork!: () => void;
  const working = new Promise<void>((resolve) => (startedWork = resolve));
  let r: Rig | undefined;
  try {
    r = await rig(gate, () => startedWork());
    // The host takes the ask but nothing it sends reaches the asker (cut off right after it
    // answered the placer): the watch must start from the placer's word of the hand-over.
    jest.spyOn(r.host.transport.keepalive, 'track').mockImplementation((msg) => msg);
    const ref = r.client.ref(
      workerActor(gate, () => {}),
      'w5',
    );
    const askedAt = Date.now();
    const outcome = ref.ask('work', {}, { timeoutMs: LONG_TIMEOUT_MS }).then(
      () => undefined,
      (err: unknown) => err,
    );
    await working;
    const err = await outcome;

    expect(errorCode(err)).toBe('UNAVAILABLE');
    expect((err as TroupeError).details?.['hostSilent']).toBe(true);
    expect(r.signs()).toBe(1); // the placer's, and none from the host
    expect(Date.now() - askedAt).toBeLessThan(LONG_TIMEOUT_MS / 4);
  } finally {
    open();
    await teardown(r);
  }
});

test('a short ask is not watched: it ends at its own deadline', async () => {
  const { gate, open } = gated();
  let startedWork!: () => void;
  const working = new Promise<void>((resolve) => (startedWork = resolve));
  let r: Rig | undefined;
  try {
    r = await rig(gate, () => startedWork());
    const ref = r.client.ref(
      workerActor(gate, () => {}),
      'w4',
    );
    expect(await ref.ask('ping', {}, { timeoutMs: 30_000 })).toBe('pong');
    // 2 s is under twelve intervals (2.4 s): the asker does not watch it, so its host falling
    // silent is no failure (a watched ask would fail UNAVAILABLE after 0.8 s).
    const outcome = ref.ask('work', {}, { timeoutMs: 2_000 }).then(
      () => undefined,
      (err: unknown) => err,
    );
    await working;
    await r.hostConnection.close();
    const err = await outcome;

    expect(errorCode(err)).toBe('TIMEOUT');
  } finally {
    open();
    await teardown(r);
  }
});

describe('an ask that chooses its own liveness interval (livenessMs)', () => {
  // The cluster keeps its default keepalive (5 s: only asks of a minute or more are watched);
  // these asks of 20 s ask for signs every 200 ms. A node agent's sandbox waits are such asks:
  // a killed node agent used to hold its tasks until each wait's deadline.
  const ASK_TIMEOUT_MS = 20_000;

  test('is kept alive by signs at its interval while its host works', async () => {
    const { gate, open } = gated();
    let r: Rig | undefined;
    try {
      r = await rig(gate, () => {}, 0);
      const ref = r.client.ref(
        workerActor(gate, () => {}),
        'l1',
      );
      expect(await ref.ask('ping', {}, { timeoutMs: 30_000 })).toBe('pong');
      const reply = ref.ask('work', {}, { timeoutMs: ASK_TIMEOUT_MS, livenessMs: 200 });
      // Six signs take over a second: longer than the 0.8 s of silence that would fail the ask.
      const rig_ = r;
      await waitFor(() => rig_.signs() >= 6, { timeoutMs: 10_000, message: 'six signs of life' });
      open();
      expect(await reply).toBe('done');
      expect(r.host.transport.keepalive.size).toBe(0);
    } finally {
      open();
      await teardown(r);
    }
  });

  test('fails UNAVAILABLE soon after its host falls silent, long before its deadline', async () => {
    const { gate, open } = gated();
    let startedWork!: () => void;
    const working = new Promise<void>((resolve) => (startedWork = resolve));
    let r: Rig | undefined;
    try {
      r = await rig(gate, () => startedWork(), 0);
      const ref = r.client.ref(
        workerActor(gate, () => {}),
        'l2',
      );
      expect(await ref.ask('ping', {}, { timeoutMs: 30_000 })).toBe('pong');
      const outcome = ref.ask('work', {}, { timeoutMs: ASK_TIMEOUT_MS, livenessMs: 200 }).then(
        () => undefined,
        (err: unknown) => err,
      );
      await working;
      const lostAt = Date.now();
      await r.hostConnection.close();
      const err = await outcome;
      const waitedMs = Date.now() - lostAt;

      expect(errorCode(err)).toBe('UNAVAILABLE');
      expect((err as TroupeError).details?.['hostSilent']).toBe(true);
      // Four silent intervals (0.8 s) plus scheduling, against a deadline of 20 s.
      expect(waitedMs).toBeLessThan(ASK_TIMEOUT_MS / 4);
    } finally {
      open();
      await teardown(r);
    }
  });
});
