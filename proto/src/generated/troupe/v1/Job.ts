// Original file: troupe/v1/jobs.proto

import type { JobState as _troupe_v1_JobState, JobState__Output as _troupe_v1_JobState__Output } from '../../troupe/v1/JobState';
import type { JobProgress as _troupe_v1_JobProgress, JobProgress__Output as _troupe_v1_JobProgress__Output } from '../../troupe/v1/JobProgress';
import type { Long } from '@grpc/proto-loader';

export interface Job {
  'jobId'?: (string);
  /**
   * Name from the spec.
   */
  'name'?: (string);
  /**
   * Job kind from the spec (for example "issue-resolution", "evolve").
   */
  'kind'?: (string);
  'state'?: (_troupe_v1_JobState);
  /**
   * Why the job is in its state (for FAILED/CANCELLED); empty otherwise.
   */
  'reason'?: (string);
  'labels'?: ({[key: string]: string});
  /**
   * Unix ms.
   */
  'createdUnixMs'?: (number | string | Long);
  /**
   * Unix ms; absent until the job starts.
   */
  'startedUnixMs'?: (number | string | Long);
  /**
   * Unix ms; absent until the job reaches a final state.
   */
  'finishedUnixMs'?: (number | string | Long);
  'progress'?: (_troupe_v1_JobProgress | null);
  /**
   * The validated spec, normalised to JSON.
   */
  'specJson'?: (string);
  '_startedUnixMs'?: "startedUnixMs";
  '_finishedUnixMs'?: "finishedUnixMs";
}

export interface Job__Output {
  'jobId': (string);
  /**
   * Name from the spec.
   */
  'name': (string);
  /**
   * Job kind from the spec (for example "issue-resolution", "evolve").
   */
  'kind': (string);
  'state': (_troupe_v1_JobState__Output);
  /**
   * Why the job is in its state (for FAILED/CANCELLED); empty otherwise.
   */
  'reason': (string);
  'labels': ({[key: string]: string});
  /**
   * Unix ms.
   */
  'createdUnixMs': (number);
  /**
   * Unix ms; absent until the job starts.
   */
  'startedUnixMs'?: (number);
  /**
   * Unix ms; absent until the job reaches a final state.
   */
  'finishedUnixMs'?: (number);
  'progress': (_troupe_v1_JobProgress__Output | null);
  /**
   * The validated spec, normalised to JSON.
   */
  'specJson': (string);
  '_startedUnixMs'?: "startedUnixMs";
  '_finishedUnixMs'?: "finishedUnixMs";
}
