// Original file: troupe/v1/jobs.proto


export interface GetJobRequest {
  'jobId'?: (string);
}

export interface GetJobRequest__Output {
  'jobId': (string);
}
