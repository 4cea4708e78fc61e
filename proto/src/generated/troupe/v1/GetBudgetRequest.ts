// Original file: troupe/v1/jobs.proto


export interface GetBudgetRequest {
  /**
   * A scope id (`cluster`, `job:<job_id>`, `agent:<id>`): only this scope and
   * the reservations held in its subtree. Empty means every scope.
   */
  'scope'?: (string);
}

export interface GetBudgetRequest__Output {
  /**
   * A scope id (`cluster`, `job:<job_id>`, `agent:<id>`): only this scope and
   * the reservations held in its subtree. Empty means every scope.
   */
  'scope': (string);
}
