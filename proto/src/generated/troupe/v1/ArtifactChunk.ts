// Original file: troupe/v1/jobs.proto

import type { Long } from '@grpc/proto-loader';

/**
 * A piece of an artifact. Chunks arrive in order and are at most 64 KiB.
 */
export interface ArtifactChunk {
  'data'?: (Buffer | Uint8Array | string);
  /**
   * Byte offset of `data` within the artifact.
   */
  'offset'?: (number | string | Long);
  /**
   * Size of the whole artifact in bytes (same in every chunk).
   */
  'totalSize'?: (number | string | Long);
  /**
   * MIME type of the artifact (set in the first chunk; may repeat).
   */
  'contentType'?: (string);
}

/**
 * A piece of an artifact. Chunks arrive in order and are at most 64 KiB.
 */
export interface ArtifactChunk__Output {
  'data': (Buffer);
  /**
   * Byte offset of `data` within the artifact.
   */
  'offset': (number);
  /**
   * Size of the whole artifact in bytes (same in every chunk).
   */
  'totalSize': (number);
  /**
   * MIME type of the artifact (set in the first chunk; may repeat).
   */
  'contentType': (string);
}
