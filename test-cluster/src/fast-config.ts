/**
 * Coordinator settings of every test cluster: heartbeats every 250 ms and a host declared dead
 * after four missed ones (1 s), registry sweeps every 500 ms, no metrics listener, no shutdown
 * grace. Tests that need other timing (a short leader lease, say) override single fields.
 */
export const FAST_COORDINATOR_CONFIG = {
  heartbeatMs: 250,
  missedHeartbeats: 4,
  sweepIntervalMs: 500,
  shutdownGraceMs: 0,
} as const;

/** Node-agent settings of every test cluster: two seconds for running work on stop. */
export const FAST_NODE_AGENT_CONFIG = {
  shutdownGraceMs: 2_000,
  // QEMU guests only where a test asks for them (`vm: {enabled: 'on'}`): most tests need none.
  vm: { enabled: 'off' },
} as const;
