// Original file: troupe/v1/jobs.proto

import type { Node as _troupe_v1_Node, Node__Output as _troupe_v1_Node__Output } from '../../troupe/v1/Node';
import type { Long } from '@grpc/proto-loader';

/**
 * One message of a WatchNodes stream. The client's view is the snapshot with
 * every later update applied in order: nodes replace the entry with the same
 * host id (or are added), removed ids are dropped.
 */
export interface NodesUpdate {
  /**
   * True in the first message of every stream, and only there: `nodes` is
   * then every registered node, sorted by host id, and replaces whatever the
   * client held.
   */
  'snapshot'?: (boolean);
  /**
   * Nodes that registered or changed (state, slots in use, ...), whole. A
   * heartbeat alone does not make a node change: `last_heartbeat_unix_ms` is
   * sent again with other changes, and at least every 5 s while the node
   * heartbeats.
   */
  'nodes'?: (_troupe_v1_Node)[];
  /**
   * Host ids of nodes that deregistered. Never in a snapshot.
   */
  'removedHostIds'?: (string)[];
  /**
   * The server's clock when it sent the message, Unix ms (compare it with
   * `Node.last_heartbeat_unix_ms`).
   */
  'atUnixMs'?: (number | string | Long);
}

/**
 * One message of a WatchNodes stream. The client's view is the snapshot with
 * every later update applied in order: nodes replace the entry with the same
 * host id (or are added), removed ids are dropped.
 */
export interface NodesUpdate__Output {
  /**
   * True in the first message of every stream, and only there: `nodes` is
   * then every registered node, sorted by host id, and replaces whatever the
   * client held.
   */
  'snapshot': (boolean);
  /**
   * Nodes that registered or changed (state, slots in use, ...), whole. A
   * heartbeat alone does not make a node change: `last_heartbeat_unix_ms` is
   * sent again with other changes, and at least every 5 s while the node
   * heartbeats.
   */
  'nodes': (_troupe_v1_Node__Output)[];
  /**
   * Host ids of nodes that deregistered. Never in a snapshot.
   */
  'removedHostIds': (string)[];
  /**
   * The server's clock when it sent the message, Unix ms (compare it with
   * `Node.last_heartbeat_unix_ms`).
   */
  'atUnixMs': (number);
}
