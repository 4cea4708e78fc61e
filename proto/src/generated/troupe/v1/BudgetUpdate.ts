// Original file: troupe/v1/jobs.proto

import type { BudgetScope as _troupe_v1_BudgetScope, BudgetScope__Output as _troupe_v1_BudgetScope__Output } from '../../troupe/v1/BudgetScope';
import type { BudgetScopeRef as _troupe_v1_BudgetScopeRef, BudgetScopeRef__Output as _troupe_v1_BudgetScopeRef__Output } from '../../troupe/v1/BudgetScopeRef';
import type { BudgetReservation as _troupe_v1_BudgetReservation, BudgetReservation__Output as _troupe_v1_BudgetReservation__Output } from '../../troupe/v1/BudgetReservation';
import type { BudgetReservationRef as _troupe_v1_BudgetReservationRef, BudgetReservationRef__Output as _troupe_v1_BudgetReservationRef__Output } from '../../troupe/v1/BudgetReservationRef';
import type { Long } from '@grpc/proto-loader';

/**
 * One message of a WatchBudget stream. The client's view is the snapshot
 * with every later update applied in order: scopes replace the entry with
 * the same (ledger, scope) or are added, opened reservations are added,
 * removed scopes and closed reservations are dropped.
 */
export interface BudgetUpdate {
  /**
   * True in the first message of every stream, and only there: `scopes` and
   * `opened` are then the whole view (what GetBudget returns) and replace
   * whatever the client held.
   */
  'snapshot'?: (boolean);
  /**
   * Scopes that appeared or whose limits, totals, open reservation count or
   * exhaustion changed, whole. Sorted by id (then ledger).
   */
  'scopes'?: (_troupe_v1_BudgetScope)[];
  /**
   * Scopes that left the view: removed from their ledger (a finished job's
   * scope, folded into the cluster's). Never in a snapshot.
   */
  'removedScopes'?: (_troupe_v1_BudgetScopeRef)[];
  /**
   * Reservations opened by model calls (in a snapshot: every open one), in
   * the order of `GetBudgetResponse.reservations`.
   */
  'opened'?: (_troupe_v1_BudgetReservation)[];
  /**
   * Reservations that closed: settled with what the call cost, released
   * unused, or expired (their holder died). Never in a snapshot.
   */
  'closed'?: (_troupe_v1_BudgetReservationRef)[];
  /**
   * The server's clock when it computed the message, Unix ms (compare it with
   * `BudgetReservation.expires_unix_ms`).
   */
  'atUnixMs'?: (number | string | Long);
}

/**
 * One message of a WatchBudget stream. The client's view is the snapshot
 * with every later update applied in order: scopes replace the entry with
 * the same (ledger, scope) or are added, opened reservations are added,
 * removed scopes and closed reservations are dropped.
 */
export interface BudgetUpdate__Output {
  /**
   * True in the first message of every stream, and only there: `scopes` and
   * `opened` are then the whole view (what GetBudget returns) and replace
   * whatever the client held.
   */
  'snapshot': (boolean);
  /**
   * Scopes that appeared or whose limits, totals, open reservation count or
   * exhaustion changed, whole. Sorted by id (then ledger).
   */
  'scopes': (_troupe_v1_BudgetScope__Output)[];
  /**
   * Scopes that left the view: removed from their ledger (a finished job's
   * scope, folded into the cluster's). Never in a snapshot.
   */
  'removedScopes': (_troupe_v1_BudgetScopeRef__Output)[];
  /**
   * Reservations opened by model calls (in a snapshot: every open one), in
   * the order of `GetBudgetResponse.reservations`.
   */
  'opened': (_troupe_v1_BudgetReservation__Output)[];
  /**
   * Reservations that closed: settled with what the call cost, released
   * unused, or expired (their holder died). Never in a snapshot.
   */
  'closed': (_troupe_v1_BudgetReservationRef__Output)[];
  /**
   * The server's clock when it computed the message, Unix ms (compare it with
   * `BudgetReservation.expires_unix_ms`).
   */
  'atUnixMs': (number);
}
