// Original file: troupe/v1/jobs.proto


export interface WatchBudgetRequest {
  /**
   * A scope id (`cluster`, `job:<job_id>`, `agent:<id>`): only this scope and
   * the reservations held in its subtree, as GetBudget. Empty means every
   * scope.
   */
  'scope'?: (string);
}

export interface WatchBudgetRequest__Output {
  /**
   * A scope id (`cluster`, `job:<job_id>`, `agent:<id>`): only this scope and
   * the reservations held in its subtree, as GetBudget. Empty means every
   * scope.
   */
  'scope': (string);
}
