// Original file: troupe/v1/jobs.proto


/**
 * A piece of a task file being uploaded. Chunks are sent in order; each is at
 * most the server's message limit (4 MiB by default; clients send 1 MiB).
 */
export interface TaskFileChunk {
  'data'?: (Buffer | Uint8Array | string);
  /**
   * The file's name as the user knows it, e.g. "tasks.jsonl" (first chunk).
   */
  'name'?: (string);
}

/**
 * A piece of a task file being uploaded. Chunks are sent in order; each is at
 * most the server's message limit (4 MiB by default; clients send 1 MiB).
 */
export interface TaskFileChunk__Output {
  'data': (Buffer);
  /**
   * The file's name as the user knows it, e.g. "tasks.jsonl" (first chunk).
   */
  'name': (string);
}
