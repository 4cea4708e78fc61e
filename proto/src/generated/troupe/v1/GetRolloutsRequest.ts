// Original file: troupe/v1/jobs.proto


export interface GetRolloutsRequest {
  'jobId'?: (string);
}

export interface GetRolloutsRequest__Output {
  'jobId': (string);
}
