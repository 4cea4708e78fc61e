// Original file: troupe/v1/jobs.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Dollars, tokens and model calls of a budget scope.
 */
export interface BudgetTotals {
  'usd'?: (number | string);
  'tokens'?: (number | string | Long);
  /**
   * Model calls (each reservation counts one).
   */
  'calls'?: (number | string | Long);
}

/**
 * Dollars, tokens and model calls of a budget scope.
 */
export interface BudgetTotals__Output {
  'usd': (number);
  'tokens': (number);
  /**
   * Model calls (each reservation counts one).
   */
  'calls': (number);
}
