// A host process for the dead-island-host test: it hosts only the `evolve` driver's island actors
// (the kind the coordinators host next to the task actors), so the test can kill -9 a host running
// island steps while the task's own host lives. Built packages (dist/). Prints `READY` once
// registered with the cluster.
const { ActorSystem } = require('@troupe/actors');
const { connect } = require('@nats-io/transport-node');
const { createEvolveDriver } = require('@troupe/benchmarks');

const [servers, cluster, hostId] = process.argv.slice(2);

(async () => {
  const nc = await connect({ servers });
  let system;
  const runtime = () => ({ cluster, hostId, nc, refs: system, log: system.log });
  const hosting = createEvolveDriver().actors(runtime);
  system = await ActorSystem.start({
    cluster,
    connection: nc,
    hostId,
    hosting,
    placement: 'none',
    register: true,
  });
  process.stdout.write('READY\n');
})().catch((err) => {
  process.stderr.write(`${(err && err.stack) || err}\n`);
  process.exit(1);
});
