/**
 * perf/nats-baseline: the physical limit every Troupe messaging figure is compared with.
 * Raw NATS request/reply round trip (16 B, one process, v3 client) and raw publish throughput
 * (128 B, flushed), against a nats-server started for this run.
 */
import { connect } from '@nats-io/transport-node';
import { startNatsServer } from '@troupe/testkit';
import { median, nowUs, printResult, printTable, quantile } from '../lib/report';

const RTT_WARMUP = 500;
const RTT_SAMPLES = 5_000;
const PUB_MESSAGES = 200_000;

async function main(): Promise<void> {
  const server = await startNatsServer();
  const nc = await connect({ servers: server.url });
  const responder = await connect({ servers: server.url });
  try {
    const payload = new Uint8Array(16);
    const sub = responder.subscribe('bench.echo', {
      callback: (_err, msg) => {
        msg.respond(msg.data);
      },
    });
    await responder.flush();

    const rtts: number[] = [];
    for (let i = 0; i < RTT_WARMUP + RTT_SAMPLES; i++) {
      const t0 = nowUs();
      await nc.request('bench.echo', payload, { timeout: 5_000 });
      if (i >= RTT_WARMUP) rtts.push(nowUs() - t0);
    }
    sub.unsubscribe();

    const body = new Uint8Array(128);
    let received = 0;
    const done = new Promise<void>((resolve) => {
      responder.subscribe('bench.pub', {
        callback: () => {
          if (++received === PUB_MESSAGES) resolve();
        },
      });
    });
    await responder.flush();
    const t0 = nowUs();
    for (let i = 0; i < PUB_MESSAGES; i++) nc.publish('bench.pub', body);
    await nc.flush();
    const pubUs = nowUs() - t0;
    await done;
    const deliveredUs = nowUs() - t0;

    const metrics = {
      nats_rtt_p50_us: median(rtts),
      nats_rtt_p99_us: quantile(rtts, 0.99),
      nats_pub_per_s: PUB_MESSAGES / (pubUs / 1e6),
    };
    printTable('raw NATS (same process, one server)', {
      ...metrics,
      'pub+deliver msg/s': PUB_MESSAGES / (deliveredUs / 1e6),
      samples: RTT_SAMPLES,
    });
    printResult('nats-baseline', metrics);
  } finally {
    await nc.close();
    await responder.close();
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
