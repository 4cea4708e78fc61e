/**
 * @packageDocumentation
 * @troupe/test-cluster (test-only): the one place integration tests start a Troupe cluster —
 * nats-server, coordinators and node agents, in this process or as processes built from
 * `dist/` — with the fast heartbeat settings of every test (like Temporal's
 * `TestWorkflowEnvironment`). Also the jest global set-up that rebuilds a stale `dist/` before
 * integration tests spawn it.
 */
export { COORDINATOR_MAIN, NODE_AGENT_MAIN } from './built-entry-points';
export { FAST_COORDINATOR_CONFIG, FAST_NODE_AGENT_CONFIG } from './fast-config';
export { followContainerEvents, type DockerEvent } from './follow-container-events';
export { describeStale, stalePackages, type StalePackage } from './stale-build';
export {
  TestCluster,
  type TestClusterOptions,
  type TestClusterParts,
  type TestCoordinatorOptions,
  type TestCoordinatorProcessOptions,
  type TestNodeAgentOptions,
} from './test-cluster';
export { spawnNodeProcess, type SpawnNodeProcessOptions, type TestProcess } from './test-process';
