// Original file: troupe/v1/jobs.proto


export interface GetArtifactRequest {
  'jobId'?: (string);
  /**
   * Artifact path as listed in `TaskResult.artifacts`.
   */
  'path'?: (string);
}

export interface GetArtifactRequest__Output {
  'jobId': (string);
  /**
   * Artifact path as listed in `TaskResult.artifacts`.
   */
  'path': (string);
}
