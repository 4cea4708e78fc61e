// Original file: troupe/v1/jobs.proto


export interface CancelJobRequest {
  'jobId'?: (string);
  /**
   * Why, recorded on the job and its events (for example "user").
   */
  'reason'?: (string);
}

export interface CancelJobRequest__Output {
  'jobId': (string);
  /**
   * Why, recorded on the job and its events (for example "user").
   */
  'reason': (string);
}
