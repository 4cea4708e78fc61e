// Original file: troupe/v1/jobs.proto

/**
 * Encoding of `SubmitJobRequest.spec`.
 */
export const SpecFormat = {
  /**
   * Detect: YAML (a superset of JSON) is assumed.
   */
  SPEC_FORMAT_UNSPECIFIED: 'SPEC_FORMAT_UNSPECIFIED',
  SPEC_FORMAT_YAML: 'SPEC_FORMAT_YAML',
  SPEC_FORMAT_JSON: 'SPEC_FORMAT_JSON',
} as const;

/**
 * Encoding of `SubmitJobRequest.spec`.
 */
export type SpecFormat =
  /**
   * Detect: YAML (a superset of JSON) is assumed.
   */
  | 'SPEC_FORMAT_UNSPECIFIED'
  | 0
  | 'SPEC_FORMAT_YAML'
  | 1
  | 'SPEC_FORMAT_JSON'
  | 2

/**
 * Encoding of `SubmitJobRequest.spec`.
 */
export type SpecFormat__Output = typeof SpecFormat[keyof typeof SpecFormat]
