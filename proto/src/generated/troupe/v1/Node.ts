// Original file: troupe/v1/jobs.proto

import type { NodeState as _troupe_v1_NodeState, NodeState__Output as _troupe_v1_NodeState__Output } from '../../troupe/v1/NodeState';
import type { Long } from '@grpc/proto-loader';

/**
 * A registered node agent.
 */
export interface Node {
  'hostId'?: (string);
  'state'?: (_troupe_v1_NodeState);
  /**
   * Actor kinds it hosts.
   */
  'kinds'?: (string)[];
  /**
   * Capacity: slots per actor kind.
   */
  'slots'?: ({[key: string]: number});
  /**
   * Slots in use per actor kind.
   */
  'used'?: ({[key: string]: number});
  /**
   * CPU cores available to sandboxes.
   */
  'cpu'?: (number | string);
  /**
   * Memory available to sandboxes, MiB.
   */
  'memMb'?: (number | string | Long);
  /**
   * Sandbox backends: "docker", "process", "kvm".
   */
  'backends'?: (string)[];
  'labels'?: ({[key: string]: string});
  /**
   * Last heartbeat received, Unix ms.
   */
  'lastHeartbeatUnixMs'?: (number | string | Long);
}

/**
 * A registered node agent.
 */
export interface Node__Output {
  'hostId': (string);
  'state': (_troupe_v1_NodeState__Output);
  /**
   * Actor kinds it hosts.
   */
  'kinds': (string)[];
  /**
   * Capacity: slots per actor kind.
   */
  'slots': ({[key: string]: number});
  /**
   * Slots in use per actor kind.
   */
  'used': ({[key: string]: number});
  /**
   * CPU cores available to sandboxes.
   */
  'cpu': (number);
  /**
   * Memory available to sandboxes, MiB.
   */
  'memMb': (number);
  /**
   * Sandbox backends: "docker", "process", "kvm".
   */
  'backends': (string)[];
  'labels': ({[key: string]: string});
  /**
   * Last heartbeat received, Unix ms.
   */
  'lastHeartbeatUnixMs': (number);
}
