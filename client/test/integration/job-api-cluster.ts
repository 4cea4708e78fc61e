import { registerBuiltinDrivers } from '@troupe/benchmarks';
import { DriverRegistry } from '@troupe/coordinator';
import { TestCluster } from '@troupe/test-cluster';

/**
 * The cluster of the job API tests: a coordinator serving the job API with the built-in drivers
 * (a 2 s leader lease, so a restarted coordinator leads at once; a 1 s job watchdog) and an
 * in-process node agent running Docker sandboxes.
 */
export function startJobApiCluster(): Promise<TestCluster> {
  return TestCluster.start({
    jobApi: true,
    coordinator: {
      drivers: () => registerBuiltinDrivers(new DriverRegistry()),
      config: { leaseMs: 2_000, renewMs: 500 },
      deps: { jobs: { cancelGraceMs: 20_000, watchdogMs: 1_000 } },
    },
    nodeAgent: {},
  });
}
