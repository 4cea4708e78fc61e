// Original file: troupe/v1/jobs.proto

import type { Long } from '@grpc/proto-loader';

export interface WatchJobRequest {
  'jobId'?: (string);
  /**
   * First event sequence number to deliver. Sequences start at 1; 0 and 1
   * both mean "from the beginning". Use the last sequence seen + 1 to resume
   * a broken watch without gaps or duplicates.
   */
  'fromSequence'?: (number | string | Long);
}

export interface WatchJobRequest__Output {
  'jobId': (string);
  /**
   * First event sequence number to deliver. Sequences start at 1; 0 and 1
   * both mean "from the beginning". Use the last sequence seen + 1 to resume
   * a broken watch without gaps or duplicates.
   */
  'fromSequence': (number);
}
