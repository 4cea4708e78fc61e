import {
  randomClusterName,
  startNatsServer,
  stopProcess,
  timed,
  type NatsServerHandle,
  type Timed,
} from '@troupe/testkit';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { ErrorReason, hasReason } from '@troupe/proto';
import { ensureInfrastructure, STATE_STORE_TIMEOUT_MS } from '../../src/infrastructure';
import { StateStore } from '../../src/state-store';

// Chaos run 24, seed 9429: after a NATS server's kill -9 the streams had leaders again 0.7 s after
// the heal, yet a task waited 6.6 s more. Its sandbox actors' first commits (creates) had been sent
// while the state bucket's stream elected its leader; such a request is lost, and a create waited
// the JetStream client's 5 s before the commit path could read what became of it and write again.
// A stopped server (SIGSTOP) answers nothing, as a leaderless stream does.

let server: NatsServerHandle;
let nc: NatsConnection;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

const record = (epoch: number, cursor = 0) => ({ epoch, cursor, data: { n: cursor } });

test('a state-store request nobody answers fails after 2 s as an outage, a create too', async () => {
  const infra = await ensureInfrastructure(nc, await jetstreamManager(nc), randomClusterName());
  const store = new StateStore(infra.state, nc);
  const existing = { kind: 'k', id: 'existing' };
  await store.commit(existing, 0, record(1));
  await stopProcess(server.pid);
  let ops: Timed[];
  try {
    ops = [
      // A new actor's first commit: a create, which waited 5 s before.
      await timed(() => store.commit({ kind: 'k', id: 'new' }, 0, record(1))),
      // A claim's read and re-write.
      await timed(() => store.claim(existing, 2)),
      await timed(() => store.read(existing)),
    ];
  } finally {
    process.kill(server.pid, 'SIGCONT');
  }
  for (const { ms } of ops) {
    expect(ms).toBeGreaterThanOrEqual(STATE_STORE_TIMEOUT_MS - 100);
    expect(ms).toBeLessThan(4_000);
  }
  // The commit fails as a store outage, which the runtime retries.
  expect(hasReason(ops[0]!.err, ErrorReason.STORE_UNAVAILABLE)).toBe(true);
  expect(ops[1]!.err).toBeInstanceOf(Error);
  expect(ops[2]!.err).toBeInstanceOf(Error);
  // The server answers again: so does the store.
  const claimed = await store.claim(existing, 2);
  expect(claimed.record?.epoch).toBe(2);
  await store.commit(existing, claimed.revision, record(2, 1));
  expect((await store.read(existing))?.record).toEqual(record(2, 1));
}, 30_000);
