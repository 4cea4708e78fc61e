// Original file: troupe/v1/jobs.proto

import type { BudgetScope as _troupe_v1_BudgetScope, BudgetScope__Output as _troupe_v1_BudgetScope__Output } from '../../troupe/v1/BudgetScope';
import type { BudgetReservation as _troupe_v1_BudgetReservation, BudgetReservation__Output as _troupe_v1_BudgetReservation__Output } from '../../troupe/v1/BudgetReservation';
import type { Long } from '@grpc/proto-loader';

export interface GetBudgetResponse {
  /**
   * Scopes sorted by id (then ledger).
   */
  'scopes'?: (_troupe_v1_BudgetScope)[];
  /**
   * Open reservations: the cluster ledger's, then each job ledger's, oldest
   * first within a ledger.
   */
  'reservations'?: (_troupe_v1_BudgetReservation)[];
  /**
   * Ledger clock when it was read, Unix ms.
   */
  'atUnixMs'?: (number | string | Long);
}

export interface GetBudgetResponse__Output {
  /**
   * Scopes sorted by id (then ledger).
   */
  'scopes': (_troupe_v1_BudgetScope__Output)[];
  /**
   * Open reservations: the cluster ledger's, then each job ledger's, oldest
   * first within a ledger.
   */
  'reservations': (_troupe_v1_BudgetReservation__Output)[];
  /**
   * Ledger clock when it was read, Unix ms.
   */
  'atUnixMs': (number);
}
