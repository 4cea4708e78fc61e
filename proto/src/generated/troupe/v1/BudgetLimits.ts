// Original file: troupe/v1/jobs.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Limits of a budget scope; an absent field is unlimited.
 */
export interface BudgetLimits {
  'usd'?: (number | string);
  'tokens'?: (number | string | Long);
  'calls'?: (number | string | Long);
  '_usd'?: "usd";
  '_tokens'?: "tokens";
  '_calls'?: "calls";
}

/**
 * Limits of a budget scope; an absent field is unlimited.
 */
export interface BudgetLimits__Output {
  'usd'?: (number);
  'tokens'?: (number);
  'calls'?: (number);
  '_usd'?: "usd";
  '_tokens'?: "tokens";
  '_calls'?: "calls";
}
