// Original file: troupe/v1/jobs.proto


export interface DeleteJobRequest {
  'jobId'?: (string);
}

export interface DeleteJobRequest__Output {
  'jobId': (string);
}
