// Original file: troupe/v1/jobs.proto


/**
 * Names a reservation in a `BudgetUpdate` (an id is unique within a ledger).
 */
export interface BudgetReservationRef {
  /**
   * Root of the ledger that held it (see `BudgetScope.ledger`).
   */
  'ledger'?: (string);
  /**
   * Reservation id.
   */
  'id'?: (string);
}

/**
 * Names a reservation in a `BudgetUpdate` (an id is unique within a ledger).
 */
export interface BudgetReservationRef__Output {
  /**
   * Root of the ledger that held it (see `BudgetScope.ledger`).
   */
  'ledger': (string);
  /**
   * Reservation id.
   */
  'id': (string);
}
