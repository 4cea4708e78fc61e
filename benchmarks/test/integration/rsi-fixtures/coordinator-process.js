// A coordinator host process for the rsi kill -9 test: the built-in drivers with the rsi
// driver's model names (the roles' agent sessions run on the test's agent host), built packages
// (dist/). Arguments: NATS servers, cluster, the repository root (suite paths), and optionally a
// job spec (JSON) to submit, printing `JOB <jobId>`; prints `READY` once started.
const { Coordinator, DriverRegistry } = require('@troupe/coordinator');
const { registerBuiltinDrivers } = require('@troupe/benchmarks');

const [servers, cluster, baseDir, specJson] = process.argv.slice(2);
const names = ['actor', 'verifier', 'curriculum'];
const models = { has: (name) => names.includes(name), names: () => names };

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
  {
    drivers: registerBuiltinDrivers(new DriverRegistry(), { rsi: { models, baseDir } }),
    jobs: { watchdogMs: 1000 },
  },
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
