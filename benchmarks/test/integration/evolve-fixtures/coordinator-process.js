// A coordinator host process for the evolve kill -9 test: the built-in drivers (the evolve
// driver with its default JetStream journal), built packages (dist/). With a job spec (JSON) as
// the fourth argument it submits it and prints `JOB <jobId>`; prints `READY` once started.
const { Coordinator, DriverRegistry } = require('@troupe/coordinator');
const { registerBuiltinDrivers } = require('@troupe/benchmarks');

const [servers, cluster, specJson] = process.argv.slice(2);

Coordinator.start(
  {
    cluster,
    nats: { servers },
    heartbeatMs: 250,
    missedHeartbeats: 4,
    sweepIntervalMs: 500,
    leaseMs: 2000,
    renewMs: 500,
    metrics: { port: null },
    shutdownGraceMs: 0,
  },
  { drivers: registerBuiltinDrivers(new DriverRegistry()), jobs: { watchdogMs: 1000 } },
)
  .then(async (c) => {
    process.stdout.write('READY\n');
    if (specJson) {
      const record = await c.jobs.submit({ spec: JSON.parse(specJson) });
      process.stdout.write(`JOB ${record.jobId}\n`);
    }
    process.on('SIGTERM', () => c.stop().then(() => process.exit(0)));
  })
  .catch((err) => {
    process.stderr.write(`${(err && err.stack) || err}\n`);
    process.exit(1);
  });
