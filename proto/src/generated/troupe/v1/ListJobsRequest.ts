// Original file: troupe/v1/jobs.proto

import type { JobState as _troupe_v1_JobState, JobState__Output as _troupe_v1_JobState__Output } from '../../troupe/v1/JobState';

export interface ListJobsRequest {
  /**
   * Only jobs in one of these states; empty means every state.
   */
  'states'?: (_troupe_v1_JobState)[];
  /**
   * Only jobs carrying every one of these labels with exactly these values.
   */
  'labelSelector'?: ({[key: string]: string});
  /**
   * Maximum number of jobs in the response; 0 means the server default (50).
   * The server may cap it (at 1000).
   */
  'pageSize'?: (number);
  /**
   * `next_page_token` of the previous response, to continue the listing;
   * empty for the first page. Opaque: clients must not parse or build it, and
   * it is only valid with the same filters.
   */
  'pageToken'?: (string);
}

export interface ListJobsRequest__Output {
  /**
   * Only jobs in one of these states; empty means every state.
   */
  'states': (_troupe_v1_JobState__Output)[];
  /**
   * Only jobs carrying every one of these labels with exactly these values.
   */
  'labelSelector': ({[key: string]: string});
  /**
   * Maximum number of jobs in the response; 0 means the server default (50).
   * The server may cap it (at 1000).
   */
  'pageSize': (number);
  /**
   * `next_page_token` of the previous response, to continue the listing;
   * empty for the first page. Opaque: clients must not parse or build it, and
   * it is only valid with the same filters.
   */
  'pageToken': (string);
}
