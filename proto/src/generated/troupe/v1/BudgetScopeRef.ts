// Original file: troupe/v1/jobs.proto


/**
 * Names a scope in a `BudgetUpdate` (a scope id is unique within a ledger).
 */
export interface BudgetScopeRef {
  /**
   * Root of the ledger that held it (see `BudgetScope.ledger`).
   */
  'ledger'?: (string);
  /**
   * Scope id.
   */
  'scope'?: (string);
}

/**
 * Names a scope in a `BudgetUpdate` (a scope id is unique within a ledger).
 */
export interface BudgetScopeRef__Output {
  /**
   * Root of the ledger that held it (see `BudgetScope.ledger`).
   */
  'ledger': (string);
  /**
   * Scope id.
   */
  'scope': (string);
}
