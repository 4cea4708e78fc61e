// Original file: troupe/v1/jobs.proto

import type { Node as _troupe_v1_Node, Node__Output as _troupe_v1_Node__Output } from '../../troupe/v1/Node';

export interface DrainNodeResponse {
  /**
   * The node after the request was recorded.
   */
  'node'?: (_troupe_v1_Node | null);
}

export interface DrainNodeResponse__Output {
  /**
   * The node after the request was recorded.
   */
  'node': (_troupe_v1_Node__Output | null);
}
