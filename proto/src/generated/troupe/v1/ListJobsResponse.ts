// Original file: troupe/v1/jobs.proto

import type { Job as _troupe_v1_Job, Job__Output as _troupe_v1_Job__Output } from '../../troupe/v1/Job';

export interface ListJobsResponse {
  'jobs'?: (_troupe_v1_Job)[];
  /**
   * Token for the next page; empty when this is the last page. Opaque.
   */
  'nextPageToken'?: (string);
}

export interface ListJobsResponse__Output {
  'jobs': (_troupe_v1_Job__Output)[];
  /**
   * Token for the next page; empty when this is the last page. Opaque.
   */
  'nextPageToken': (string);
}
