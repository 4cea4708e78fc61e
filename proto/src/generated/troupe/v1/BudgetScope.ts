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
   * Parent scope id; empty for the root.
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
   * No model call fits any more here or in an ancestor.
   */
  'exhausted'?: (boolean);
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
   * Parent scope id; empty for the root.
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
   * No model call fits any more here or in an ancestor.
   */
  'exhausted': (boolean);
}
