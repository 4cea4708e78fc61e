// Original file: troupe/v1/jobs.proto

/**
 * Health of a node agent as seen by the coordinator.
 */
export const NodeState = {
  NODE_STATE_UNSPECIFIED: 'NODE_STATE_UNSPECIFIED',
  /**
   * Heartbeating and accepting work.
   */
  NODE_READY: 'NODE_READY',
  /**
   * Heartbeating, accepting no new work.
   */
  NODE_DRAINING: 'NODE_DRAINING',
  /**
   * Missed its heartbeats; its activations were re-placed.
   */
  NODE_DEAD: 'NODE_DEAD',
} as const;

/**
 * Health of a node agent as seen by the coordinator.
 */
export type NodeState =
  | 'NODE_STATE_UNSPECIFIED'
  | 0
  /**
   * Heartbeating and accepting work.
   */
  | 'NODE_READY'
  | 1
  /**
   * Heartbeating, accepting no new work.
   */
  | 'NODE_DRAINING'
  | 2
  /**
   * Missed its heartbeats; its activations were re-placed.
   */
  | 'NODE_DEAD'
  | 3

/**
 * Health of a node agent as seen by the coordinator.
 */
export type NodeState__Output = typeof NodeState[keyof typeof NodeState]
