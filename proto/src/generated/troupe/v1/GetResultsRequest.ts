// Original file: troupe/v1/jobs.proto


export interface GetResultsRequest {
  'jobId'?: (string);
  /**
   * Tasks per page: 0 means 1000; at most 5000.
   */
  'pageSize'?: (number);
  /**
   * `next_page_token` of the previous page; empty for the first. Pages follow
   * plan order, so completions between calls never skip or repeat a task.
   */
  'pageToken'?: (string);
}

export interface GetResultsRequest__Output {
  'jobId': (string);
  /**
   * Tasks per page: 0 means 1000; at most 5000.
   */
  'pageSize': (number);
  /**
   * `next_page_token` of the previous page; empty for the first. Pages follow
   * plan order, so completions between calls never skip or repeat a task.
   */
  'pageToken': (string);
}
