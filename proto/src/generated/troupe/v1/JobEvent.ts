// Original file: troupe/v1/jobs.proto

import type { JobEventType as _troupe_v1_JobEventType, JobEventType__Output as _troupe_v1_JobEventType__Output } from '../../troupe/v1/JobEventType';
import type { Long } from '@grpc/proto-loader';

/**
 * One entry of a job's event log.
 */
export interface JobEvent {
  /**
   * Position in the job's event log; starts at 1, increases by 1, never reused.
   */
  'sequence'?: (number | string | Long);
  'jobId'?: (string);
  'type'?: (_troupe_v1_JobEventType);
  /**
   * When the event was recorded, Unix ms.
   */
  'timeUnixMs'?: (number | string | Long);
  /**
   * Task the event is about; empty for job-level events.
   */
  'taskId'?: (string);
  /**
   * Type-specific data as a JSON object (keys per type above, camelCase);
   * empty when there is none.
   */
  'payloadJson'?: (string);
  /**
   * Human-readable one-line summary.
   */
  'message'?: (string);
}

/**
 * One entry of a job's event log.
 */
export interface JobEvent__Output {
  /**
   * Position in the job's event log; starts at 1, increases by 1, never reused.
   */
  'sequence': (number);
  'jobId': (string);
  'type': (_troupe_v1_JobEventType__Output);
  /**
   * When the event was recorded, Unix ms.
   */
  'timeUnixMs': (number);
  /**
   * Task the event is about; empty for job-level events.
   */
  'taskId': (string);
  /**
   * Type-specific data as a JSON object (keys per type above, camelCase);
   * empty when there is none.
   */
  'payloadJson': (string);
  /**
   * Human-readable one-line summary.
   */
  'message': (string);
}
