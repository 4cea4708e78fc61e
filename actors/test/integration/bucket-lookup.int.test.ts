import { Bucket } from '@nats-io/kv';
import { connect, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { startNatsServer, type NatsServerHandle } from '@troupe/testkit';
import { createKv, STREAM_LOOKUP_TIMEOUT_MS } from '../../src/buckets';

// A stream that is electing its leader (a server of its group was just killed) answers nothing:
// a JetStream API request sent then is lost, and the API's own timeout is 5 s. The coordinator's
// leader services open their buckets first, and started 5.1 s after a NATS server's kill -9 in
// chaos runs. Here the JetStream API of a plain nats-server (no JetStream) is answered by the
// test, which loses the first look-up of the bucket's stream as a leaderless stream does and
// answers every later request as JetStream would.

let server: NatsServerHandle;
let api: NatsConnection;
let client: NatsConnection;
beforeAll(async () => {
  server = await startNatsServer({ jetstream: false });
  api = await connect({ servers: server.url });
  client = await connect({ servers: server.url });
});
afterAll(async () => {
  await client?.close();
  await api?.close();
  await server?.stop();
});

const STREAM = 'KV_lookup';

function streamInfo(): unknown {
  return {
    type: 'io.nats.jetstream.api.v1.stream_info_response',
    created: new Date().toISOString(),
    config: {
      name: STREAM,
      subjects: ['$KV.lookup.>'],
      retention: 'limits',
      max_msgs_per_subject: 1,
      storage: 'file',
      num_replicas: 1,
      discard: 'new',
      allow_rollup_hdrs: true,
      allow_direct: true,
      max_consumers: -1,
      max_msgs: -1,
      max_bytes: -1,
      max_age: 0,
      max_msg_size: -1,
      duplicate_window: 120_000_000_000,
    },
    state: { messages: 0, bytes: 0, first_seq: 0, last_seq: 0, consumer_count: 0 },
  };
}

test('createKv asks again after a lost look-up instead of waiting out the API timeout', async () => {
  const infoRequests: number[] = [];
  const t0 = performance.now();
  const sub = api.subscribe('$JS.API.>', {
    callback: (_err, msg: Msg) => {
      if (msg.subject === '$JS.API.INFO') {
        msg.respond(
          JSON.stringify({
            type: 'io.nats.jetstream.api.v1.account_info_response',
            memory: 0,
            storage: 0,
            streams: 1,
            consumers: 0,
            limits: { max_memory: -1, max_storage: -1, max_streams: -1, max_consumers: -1 },
            api: { total: 0, errors: 0 },
          }),
        );
        return;
      }
      if (msg.subject === `$JS.API.STREAM.INFO.${STREAM}`) {
        infoRequests.push(performance.now() - t0);
        // The first look-up goes unanswered: the stream has no leader yet.
        if (infoRequests.length === 1) return;
        msg.respond(JSON.stringify(streamInfo()));
        return;
      }
      msg.respond(
        JSON.stringify({ error: { code: 500, description: `unexpected ${msg.subject}` } }),
      );
    },
  });
  try {
    const kv = await createKv(client, 'lookup', { history: 1 });
    const tookMs = performance.now() - t0;
    expect(kv).toBeInstanceOf(Bucket);
    expect((kv as Bucket).bucket).toBe('lookup');
    // The lost look-up was asked again after its own short timeout, not the API's 5 s…
    expect(infoRequests.length).toBeGreaterThanOrEqual(2);
    // The gap is timed where this process's responder sees the requests: under load it sees the
    // first one late, so the gap shows shorter than the timeout (CI, 2026-12-07: 1421 ms of
    // 1500). Half the timeout still tells a re-ask after its timeout from an immediate one.
    expect(infoRequests[1]! - infoRequests[0]!).toBeGreaterThanOrEqual(
      STREAM_LOOKUP_TIMEOUT_MS / 2,
    );
    expect(infoRequests[1]! - infoRequests[0]!).toBeLessThan(4_000);
    // …and the bucket was open well before a 5 s wait would have ended.
    expect(tookMs).toBeLessThan(4_500);
  } finally {
    sub.unsubscribe();
  }
});
