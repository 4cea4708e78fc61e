import { JobEventType } from '@troupe/proto';
import { z } from 'zod';

/** Event types a job actor records (every `JobEventType` except the unspecified value). */
export type JobEventKind = Exclude<keyof typeof JobEventType, 'JOB_EVENT_TYPE_UNSPECIFIED'>;

const EVENT_KINDS = Object.keys(JobEventType).filter((k) => k !== 'JOB_EVENT_TYPE_UNSPECIFIED') as [
  JobEventKind,
  ...JobEventKind[],
];

/** One entry of a job's event log, as stored (JSON) on `troupe.<c>.events.<jobId>`. */
export const JobEventRecordSchema = z.object({
  /** Position in the job's log: 1, 2, 3, … without gaps. */
  sequence: z.number().int().positive(),
  jobId: z.string(),
  type: z.enum(EVENT_KINDS),
  timeUnixMs: z.number().int(),
  /** Task the event is about; empty for job-level events. */
  taskId: z.string(),
  /** Type-specific data. */
  payload: z.record(z.string(), z.unknown()).optional(),
  /** One-line summary for people. */
  message: z.string(),
});

/** A decoded job event. */
export type JobEventRecord = z.output<typeof JobEventRecordSchema>;

/** An event before the log gives it a sequence and a time. */
export type JobEventDraft = Omit<JobEventRecord, 'sequence' | 'jobId' | 'timeUnixMs'> & {
  timeUnixMs?: number;
};
