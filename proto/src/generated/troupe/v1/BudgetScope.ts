// Original file: troupe/v1/jobs.proto

import type { BudgetLimits as _troupe_v1_BudgetLimits, BudgetLimits__Output as _troupe_v1_BudgetLimits__Output } from '../../troupe/v1/BudgetLimits';
import type { BudgetTotals as _troupe_v1_BudgetTotals, BudgetTotals__Output as _troupe_v1_BudgetTotals__Output } from '../../troupe/v1/BudgetTotals';

/**
 * One scope of the budget tree. Totals cover the scope's whole subtree.
 */
export interface BudgetScope {
  /**
   * Scope id, e.g. "cluster" or "job:<job_id>".
   */
  'scope'?: (string);
  /**
   * Parent scope id; empty for the root. A search's scope names its job
   * (`job:<job_id>`) although it is held in the job's own ledger.
   */
  'parent'?: (string);
  'limit'?: (_troupe_v1_BudgetLimits | null);
  /**
   * Settled usage.
   */
  'spent'?: (_troupe_v1_BudgetTotals | null);
  /**
   * Held by open reservations.
   */
  'reserved'?: (_troupe_v1_BudgetTotals | null);
  /**
   * Open reservations in the subtree.
   */
  'reservations'?: (number);
  /**
   * No model call fits any more here or in an ancestor (of its own ledger).
   */
  'exhausted'?: (boolean);
  /**
   * Root of the ledger holding the scope: "cluster" for the cluster's ledger
   * (jobs and their agents), "job:<job_id>" for a job's own ledger, which
   * holds the `agent:<job_id>/<search_id>` scopes of its searches (their
   * `max_cost_usd`). A scope is identified by (ledger, scope). The root of a
   * job's own ledger is not listed: it only adds up its searches' scopes.
   */
  'ledger'?: (string);
}

/**
 * One scope of the budget tree. Totals cover the scope's whole subtree.
 */
export interface BudgetScope__Output {
  /**
   * Scope id, e.g. "cluster" or "job:<job_id>".
   */
  'scope': (string);
  /**
   * Parent scope id; empty for the root. A search's scope names its job
   * (`job:<job_id>`) although it is held in the job's own ledger.
   */
  'parent': (string);
  'limit': (_troupe_v1_BudgetLimits__Output | null);
  /**
   * Settled usage.
   */
  'spent': (_troupe_v1_BudgetTotals__Output | null);
  /**
   * Held by open reservations.
   */
  'reserved': (_troupe_v1_BudgetTotals__Output | null);
  /**
   * Open reservations in the subtree.
   */
  'reservations': (number);
  /**
   * No model call fits any more here or in an ancestor (of its own ledger).
   */
  'exhausted': (boolean);
  /**
   * Root of the ledger holding the scope: "cluster" for the cluster's ledger
   * (jobs and their agents), "job:<job_id>" for a job's own ledger, which
   * holds the `agent:<job_id>/<search_id>` scopes of its searches (their
   * `max_cost_usd`). A scope is identified by (ledger, scope). The root of a
   * job's own ledger is not listed: it only adds up its searches' scopes.
   */
  'ledger': (string);
}
