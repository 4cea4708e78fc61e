// Original file: troupe/v1/jobs.proto

import type { Long } from '@grpc/proto-loader';

/**
 * A stored task file.
 */
export interface TaskFileUpload {
  /**
   * "sha256:<64 lowercase hex digits>", named by a spec's `tasks.upload`.
   */
  'upload'?: (string);
  /**
   * Size of the file in bytes.
   */
  'sizeBytes'?: (number | string | Long);
  /**
   * Lines that are not blank (a task each).
   */
  'lines'?: (number | string | Long);
}

/**
 * A stored task file.
 */
export interface TaskFileUpload__Output {
  /**
   * "sha256:<64 lowercase hex digits>", named by a spec's `tasks.upload`.
   */
  'upload': (string);
  /**
   * Size of the file in bytes.
   */
  'sizeBytes': (number);
  /**
   * Lines that are not blank (a task each).
   */
  'lines': (number);
}
