// Original file: troupe/v1/jobs.proto


/**
 * Task counts while a job runs.
 */
export interface JobProgress {
  'total'?: (number);
  /**
   * Tasks with a final status.
   */
  'done'?: (number);
  'passed'?: (number);
  'failed'?: (number);
  'running'?: (number);
  /**
   * LLM spend so far, USD.
   */
  'costUsd'?: (number | string);
}

/**
 * Task counts while a job runs.
 */
export interface JobProgress__Output {
  'total': (number);
  /**
   * Tasks with a final status.
   */
  'done': (number);
  'passed': (number);
  'failed': (number);
  'running': (number);
  /**
   * LLM spend so far, USD.
   */
  'costUsd': (number);
}
