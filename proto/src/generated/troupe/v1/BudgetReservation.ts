// Original file: troupe/v1/jobs.proto

import type { Long } from '@grpc/proto-loader';

/**
 * A reservation held by a model call in flight: its worst case, until the
 * call settles (with what it cost) or releases it, or the reservation expires.
 */
export interface BudgetReservation {
  /**
   * Reservation id ("r..." as handed out by the ledger).
   */
  'id'?: (string);
  /**
   * Scope it is held in (it also counts in every ancestor).
   */
  'scope'?: (string);
  'usd'?: (number | string);
  'tokens'?: (number | string | Long);
  /**
   * Who holds it: an actor address or session id.
   */
  'holder'?: (string);
  /**
   * When the ledger reclaims it unless settled or released, Unix ms.
   */
  'expiresUnixMs'?: (number | string | Long);
  /**
   * Root of the ledger holding it (see `BudgetScope.ledger`). Ids are unique
   * within a ledger only: a reservation is identified by (ledger, id).
   */
  'ledger'?: (string);
}

/**
 * A reservation held by a model call in flight: its worst case, until the
 * call settles (with what it cost) or releases it, or the reservation expires.
 */
export interface BudgetReservation__Output {
  /**
   * Reservation id ("r..." as handed out by the ledger).
   */
  'id': (string);
  /**
   * Scope it is held in (it also counts in every ancestor).
   */
  'scope': (string);
  'usd': (number);
  'tokens': (number);
  /**
   * Who holds it: an actor address or session id.
   */
  'holder': (string);
  /**
   * When the ledger reclaims it unless settled or released, Unix ms.
   */
  'expiresUnixMs': (number);
  /**
   * Root of the ledger holding it (see `BudgetScope.ledger`). Ids are unique
   * within a ledger only: a reservation is identified by (ledger, id).
   */
  'ledger': (string);
}
