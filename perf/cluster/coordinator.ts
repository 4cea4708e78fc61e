/**
 * The coordinator process of perf/cluster (alone in its process, so its CPU and memory are its
 * own): the deployment's default heartbeat settings. Prints `READY`; SIGTERM stops it.
 *   node coordinator.js <servers> <cluster>
 */
import { Coordinator } from '@troupe/coordinator';

const [servers = 'nats://127.0.0.1:4222', cluster = 'default'] = process.argv.slice(2);

Coordinator.start({ cluster, nats: { servers }, metrics: { port: null } }).then(
  (coordinator) => {
    process.stdout.write('READY\n');
    process.on('SIGTERM', () => {
      void coordinator.stop().then(() => process.exit(0));
    });
  },
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
