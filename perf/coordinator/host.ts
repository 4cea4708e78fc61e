/**
 * A host process for perf/coordinator: hosts the `probe` kind in cluster mode and prints
 * `HIT <hrtime ns>` when a `hit` turn starts (CLOCK_MONOTONIC, comparable across processes).
 */
import { ActorSystem } from '@troupe/actors';
import { Probe, setProbeListener } from './probe';

const [servers, cluster, hostId] = process.argv.slice(2);

setProbeListener(() => process.stdout.write(`HIT ${process.hrtime.bigint()}\n`));
ActorSystem.start({
  cluster: cluster ?? 'default',
  servers: servers ?? 'nats://127.0.0.1:4222',
  hostId: hostId ?? 'perf-host',
  hosting: [Probe],
  placement: 'none',
}).then(
  (system) => {
    process.stdout.write('READY\n');
    process.on('SIGTERM', () => {
      void system.shutdown({ graceMs: 1_000 }).then(() => process.exit(0));
    });
  },
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
