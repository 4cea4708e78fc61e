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
  /**
   * With from_sequence 0 or 1: start with the job's last `tail` events instead
   * of its whole history (a view of recent events of a long job). 0: the whole
   * history. Ignored when from_sequence is past 1.
   */
  'tail'?: (number);
}

export interface WatchJobRequest__Output {
  'jobId': (string);
  /**
   * First event sequence number to deliver. Sequences start at 1; 0 and 1
   * both mean "from the beginning". Use the last sequence seen + 1 to resume
   * a broken watch without gaps or duplicates.
   */
  'fromSequence': (number);
  /**
   * With from_sequence 0 or 1: start with the job's last `tail` events instead
   * of its whole history (a view of recent events of a long job). 0: the whole
   * history. Ignored when from_sequence is past 1.
   */
  'tail': (number);
}
