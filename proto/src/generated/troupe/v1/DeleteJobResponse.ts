// Original file: troupe/v1/jobs.proto

import type { Long } from '@grpc/proto-loader';

export interface DeleteJobResponse {
  /**
   * What was deleted: task records and results (keys), events, artifacts.
   */
  'deletedKeys'?: (number | string | Long);
  'deletedEvents'?: (number | string | Long);
  'deletedArtifacts'?: (number | string | Long);
}

export interface DeleteJobResponse__Output {
  /**
   * What was deleted: task records and results (keys), events, artifacts.
   */
  'deletedKeys': (number);
  'deletedEvents': (number);
  'deletedArtifacts': (number);
}
