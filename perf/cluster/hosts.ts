/**
 * The hosts process of perf/cluster: starts N hosts in one process, each an `ActorSystem` with
 * its own NATS connection that registers with the coordinator and heartbeats like a node agent,
 * hosting the `probe` kind. Prints `READY` once all are up; SIGTERM shuts them down.
 *   node hosts.js <servers> <cluster> <count>
 */
import { ActorSystem } from '@troupe/actors';
import { Probe } from '../coordinator/probe';

const [servers = 'nats://127.0.0.1:4222', cluster = 'default', countText = '1'] =
  process.argv.slice(2);

async function main(): Promise<void> {
  const systems: ActorSystem[] = [];
  const count = Number(countText);
  // A few at a time: each creates or checks the cluster's streams and buckets on start.
  for (let i = 0; i < count; i += 10) {
    systems.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(10, count - i) }, (_, k) =>
          ActorSystem.start({
            cluster,
            servers,
            hostId: `sim-${i + k}`,
            hosting: [Probe],
            placement: 'none',
            hostInfo: { cpu: 2, memMb: 4096 },
          }),
        ),
      )),
    );
  }
  process.stdout.write('READY\n');
  process.on('SIGTERM', () => {
    void Promise.all(systems.map((s) => s.shutdown({ graceMs: 500 }))).then(() => process.exit(0));
  });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
