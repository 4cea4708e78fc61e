// Original file: troupe/v1/jobs.proto


export interface GetResultsRequest {
  'jobId'?: (string);
}

export interface GetResultsRequest__Output {
  'jobId': (string);
}
