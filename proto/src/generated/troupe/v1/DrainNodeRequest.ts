// Original file: troupe/v1/jobs.proto


export interface DrainNodeRequest {
  'hostId'?: (string);
  /**
   * Why, recorded on the node.
   */
  'reason'?: (string);
}

export interface DrainNodeRequest__Output {
  'hostId': (string);
  /**
   * Why, recorded on the node.
   */
  'reason': (string);
}
