// Original file: troupe/v1/jobs.proto

import type { Node as _troupe_v1_Node, Node__Output as _troupe_v1_Node__Output } from '../../troupe/v1/Node';

export interface ListNodesResponse {
  'nodes'?: (_troupe_v1_Node)[];
}

export interface ListNodesResponse__Output {
  'nodes': (_troupe_v1_Node__Output)[];
}
