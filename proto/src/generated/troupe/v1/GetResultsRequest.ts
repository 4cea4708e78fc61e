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
  /**
   * Plan index of the page's first task when `page_token` is empty: a page
   * anywhere in the plan (the rows a dashboard shows) without reading the ones
   * before it. Must be >= 0; not allowed with a `page_token`. An offset at or
   * past the job's task count returns no tasks.
   */
  'offset'?: (number);
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
  /**
   * Plan index of the page's first task when `page_token` is empty: a page
   * anywhere in the plan (the rows a dashboard shows) without reading the ones
   * before it. Must be >= 0; not allowed with a `page_token`. An offset at or
   * past the job's task count returns no tasks.
   */
  'offset': (number);
}
