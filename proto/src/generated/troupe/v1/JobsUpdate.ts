// Original file: troupe/v1/jobs.proto

import type { Job as _troupe_v1_Job, Job__Output as _troupe_v1_Job__Output } from '../../troupe/v1/Job';
import type { Long } from '@grpc/proto-loader';

/**
 * One message of a WatchJobs stream. The client's view is the snapshot with
 * every later update applied in order: jobs replace the entry with the same
 * id (or are added), removed ids are dropped.
 */
export interface JobsUpdate {
  /**
   * True in the first message of every stream, and only there: `jobs` is
   * then the whole view, newest first, and replaces whatever the client held.
   */
  'snapshot'?: (boolean);
  /**
   * Jobs that entered the view or changed, whole.
   */
  'jobs'?: (_troupe_v1_Job)[];
  /**
   * Ids of jobs that left the view: deleted, no longer matching the filters,
   * or pushed out by a newer job. Never in a snapshot.
   */
  'removedJobIds'?: (string)[];
  /**
   * The server's clock when it sent the message, Unix ms (for durations such
   * as "running for" that the client computes from the job's times).
   */
  'atUnixMs'?: (number | string | Long);
}

/**
 * One message of a WatchJobs stream. The client's view is the snapshot with
 * every later update applied in order: jobs replace the entry with the same
 * id (or are added), removed ids are dropped.
 */
export interface JobsUpdate__Output {
  /**
   * True in the first message of every stream, and only there: `jobs` is
   * then the whole view, newest first, and replaces whatever the client held.
   */
  'snapshot': (boolean);
  /**
   * Jobs that entered the view or changed, whole.
   */
  'jobs': (_troupe_v1_Job__Output)[];
  /**
   * Ids of jobs that left the view: deleted, no longer matching the filters,
   * or pushed out by a newer job. Never in a snapshot.
   */
  'removedJobIds': (string)[];
  /**
   * The server's clock when it sent the message, Unix ms (for durations such
   * as "running for" that the client computes from the job's times).
   */
  'atUnixMs': (number);
}
